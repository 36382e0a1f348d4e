/**
 * A headless step's Pi that dies by a signal (SIGKILL, as the OOM killer sends) is an interrupted
 * attempt, with the real Pi and the fake model: the step runs again on a new Pi that continues the
 * run's conversation, and after three such deaths in a row the run fails naming the cause. A Pi
 * that exits by itself with an error fails the step with its first error line, not a later line
 * (a second error, a version banner).
 */
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readProcessIdentityNow } from "../../src/os/process-identity.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { type ProcessInfo, waitFor } from "../smoke/processes.ts";
import { runCliProcess } from "../support/host.ts";
import { submitCall } from "../support/step-responder.ts";
import { createHeadlessEnv, type HeadlessEnv, oneAgentStep } from "../support/headless-env.ts";

describe("a headless Pi that dies", () => {
  let h: HeadlessEnv;

  beforeAll(async () => {
    h = await createHeadlessEnv();
  });
  afterAll(async () => {
    await h?.close();
  });

  const status = (runId: string) => h.cliHereJson(["status", runId, "--attempts", "all"]);
  const gone = (p: ProcessInfo) => readProcessIdentityNow(p.pid) === null;
  const start = async (name: string, env: Record<string, string> = {}) => {
    const path = h.writeWorkflow(`${name}.workflow.ts`, oneAgentStep(name));
    const run = await runCliProcess(
      ["start", path, "--cwd", h.sandbox.project, "--json"],
      { ...h.env, ...env },
      90_000,
    );
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout).run.runId as string;
  };
  const settled = (runId: string) =>
    waitFor("the run to end", 120_000, async () => {
      const s = await status(runId);
      return ["completed", "failed"].includes(s.run.state) ? s : undefined;
    }, 250);

  /** Waits for the step's request at the model, then SIGKILLs the Pi that sent it. */
  const killPiDuringStep = async (name: string, from: number): Promise<number> => {
    const request = await h.model.waitForRequest(
      (r) => r.lastUserText.includes(`Do the work for ${name}.`),
      { from, timeoutMs: 90_000 },
    );
    const pi = await waitFor("the step's Pi", 30_000, () => h.piProcesses()[0]);
    process.kill(pi.pid, "SIGKILL");
    expect(await waitUntil(() => gone(pi), 10_000)).toBe(true);
    return request.index + 1;
  };

  it("runs the step again on a new Pi continuing the conversation", async () => {
    let kills = 1;
    h.decide = (request, contract) => {
      if (!contract || !request.lastUserText.includes("Do the work for survivor.")) {
        return undefined;
      }
      if (request.lastToolResult !== undefined) return undefined;
      return kills > 0 ? { kind: "hang" } : submitCall(contract, { done: true });
    };
    const from = h.model.requests.length;
    const runId = await start("survivor");
    const next = await killPiDuringStep("survivor", from);
    kills = 0;
    const done = await settled(runId);
    expect(done.run.state).toBe("completed");
    expect(done.run.output).toEqual({ result: { done: true } });
    const work = done.attempts.filter((a: any) => a.nodeId === "work").map((a: any) => a.state);
    expect(work).toEqual(["interrupted", "ok"]);
    // The new Pi continued the run's session: the cut-off prompt is there once, then the step
    // again, saying it was interrupted.
    const again = h.model.requests.slice(next).find((r) =>
      r.lastUserText.includes("Do the work for survivor.")
    )!;
    expect(again.lastUserText).toContain("was interrupted");
    const prompts = again.messages.filter((m) =>
      m.role === "user" && JSON.stringify(m.content).includes("Do the work for survivor.")
    );
    expect(prompts).toHaveLength(2);
  });

  it("fails the run naming the cause after three deaths in one step", async () => {
    h.decide = (request, contract) =>
      contract && request.lastUserText.includes("Do the work for doomed.")
        ? { kind: "hang" }
        : undefined;
    let from = h.model.requests.length;
    const runId = await start("doomed");
    for (let i = 0; i < 3; i++) from = await killPiDuringStep("doomed", from);
    const done = await settled(runId);
    expect(done.run.state).toBe("failed");
    expect(done.run.error.message).toContain('Pi was killed by SIGKILL during step "work"');
    expect(done.run.error.message).toContain("3 times");
    expect(h.piProcesses()).toEqual([]);
  });

  it("a Pi that exits by itself fails the step with its first error line", async () => {
    // A Pi command that reports a usable version, then fails on its own in RPC mode.
    const fake = join(h.sandbox.root, "broken-pi");
    writeFileSync(
      fake,
      `#!/bin/sh
if [ "$1" = "--version" ]; then echo 1.6.0; exit 0; fi
echo "Warning: settings.json has an unknown key" >&2
echo "Error: the first real problem" >&2
echo "Error: cleanup failed as well" >&2
echo "pi 1.6.0" >&2
exit 1
`,
    );
    chmodSync(fake, 0o755);
    const runId = await start("broken", { PI_WORKFLOWS_PI: fake });
    const done = await settled(runId);
    expect(done.run.state).toBe("failed");
    const work = done.attempts.find((a: any) => a.nodeId === "work");
    expect(work.state).toBe("failed");
    expect(work.error.code).toBe("piExited");
    expect(work.error.message).toBe(
      'Pi exited (exit code 1) before step "work" was submitted: Error: the first real problem',
    );
  });
});
