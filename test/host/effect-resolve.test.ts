/**
 * An ambiguous effect is never retried by a plain resume (issue 13, item 1), through the CLI's
 * entry and a real host process: pausing inside an unmanaged action blocks the run; `resume` is
 * refused with the exact recovery command; `status` names the effect and the command; `effect
 * resolve` records the verdict and resumes, either adopting the operator's output or running the
 * action again.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createHostClient, type HostClient } from "../../src/client/host-client.ts";
import { runCliInProcess } from "../support/cli-in-process.ts";
import {
  killAll,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome | undefined;
afterEach(async () => {
  client?.close();
  client = undefined;
  await killAll();
  await home?.cleanup();
  home = undefined;
});

/** `deploy` appends to a side file, then waits long on its first execution only. */
const workflow = (marker: string) => `
import { appendFileSync, readFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "pi-workflows";
const count = () => readFileSync(${
  JSON.stringify(marker)
}, "utf8").split("\\n").filter(Boolean).length;
export default defineWorkflow({
  name: "deploy",
  startAt: "deploy",
  nodes: {
    deploy: action({
      run: async () => {
        appendFileSync(${JSON.stringify(marker)}, "deploy\\n");
        if (count() === 1) await new Promise((resolve) => setTimeout(resolve, 60_000));
        return { version: count() };
      },
    }),
    report: compute({ run: ({ outputs }) => ({ deployed: outputs.deploy }) }),
  },
  edges: [{ from: "deploy", to: "report" }],
});
`;

function lines(path: string): number {
  return existsSync(path) ? readFileSync(path, "utf8").split("\n").filter(Boolean).length : 0;
}

/**
 * The CLI's entry (runCli) in this process, against the host each case started: the same parsing,
 * commands and output as a CLI process, without a Node start per command.
 */
async function cli(args: string[]) {
  return await runCliInProcess(args, home!.env);
}

let client: HostClient | undefined;

/** `run.status` in-process (the CLI's own status output is checked where it matters). */
async function runJson(runId: string): Promise<any> {
  client ??= createHostClient({ env: home!.env, autoStart: false });
  return await client.call("run.status", { runId });
}

/** Starts the workflow and pauses it inside `deploy`: the run is blocked effectAmbiguous. */
async function blockedRun(
  project: string,
  marker: string,
): Promise<{ runId: string; attemptId: string }> {
  writeFileSync(marker, "");
  client ??= createHostClient({ env: home!.env, autoStart: false });
  const { run } = await client.call("run.start", {
    payload: { workflow: "deploy.workflow.ts", cwd: project },
  });
  const runId = run.runId;
  await waitFor(() => lines(marker) === 1, "deploy to start", 20_000);
  await client!.call("run.pause", { runId });
  const status = await runJson(runId);
  expect(status.run).toMatchObject({ paused: true, blockedReason: "effectAmbiguous" });
  const attemptId = status.attempts.at(-1).attemptId as string;
  expect(status.ambiguousEffects).toEqual([
    expect.objectContaining({ attemptId, nodeId: "deploy", managed: false }),
  ]);
  return { runId, attemptId };
}

describe("effect resolve", () => {
  it("refuses a plain resume, shows the command, and applies the operator's verdict", async () => {
    home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000", PI_WORKFLOWS_KILL_GRACE_MS: "300" });
    const project = join(home.root, "project");
    mkdirSync(project, { recursive: true });
    const marker = join(project, "deploys.log");
    writeFileSync(join(project, "deploy.workflow.ts"), workflow(marker));
    const host = await startHostProcess(home.env);

    // 1. --applied: the operator's output becomes the node's result; deploy never runs again.
    const first = await blockedRun(project, marker);
    const resume = await cli(["resume", first.runId]);
    expect(resume.code).toBe(3);
    expect(resume.stderr).toContain(
      `pi-workflows effect resolve ${first.runId} ${first.attemptId}`,
    );
    expect(resume.stderr.trim().split("\n")).toHaveLength(1);
    expect((await runJson(first.runId)).run).toMatchObject({ blockedReason: "effectAmbiguous" });
    const text = await cli(["status", first.runId]);
    expect(text.stdout).toContain("ambiguous effects");
    expect(text.stdout).toContain(
      `pi-workflows effect resolve ${first.runId.slice(0, 12)} ${first.attemptId} --applied`,
    );
    const applied = await cli([
      "effect",
      "resolve",
      first.runId,
      first.attemptId,
      "--applied",
      '{"version":"by-hand"}',
      "--operator",
      "ops-1",
    ]);
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout).toContain("applied");
    const done = await waitFor(
      async () => {
        const s = await runJson(first.runId);
        return s.run.state === "completed" ? s : null;
      },
      "the resolved run to complete",
      30_000,
    );
    expect(done.run.output).toEqual({ deployed: { version: "by-hand" } });
    expect(lines(marker)).toBe(1);

    // 2. --not-applied: the action runs again (exactly once more).
    appendFileSync(marker, "");
    const second = await blockedRun(project, marker);
    const again = await cli(["effect", "resolve", second.runId, second.attemptId, "--not-applied"]);
    expect(again.code, again.stderr).toBe(0);
    const redone = await waitFor(
      async () => {
        const s = await runJson(second.runId);
        return s.run.state === "completed" ? s : null;
      },
      "the retried run to complete",
      30_000,
    );
    expect(redone.run.output).toEqual({ deployed: { version: 2 } });
    expect(lines(marker)).toBe(2);

    // Bad verdicts are usage errors; a second resolve of the same run is refused by the host.
    expect((await cli(["effect", "resolve", second.runId, "x"])).code).toBe(2);
    expect((await cli(["effect", "resolve", second.runId, "x", "--applied", "{"])).code).toBe(2);
    const late = await cli(["effect", "resolve", second.runId, second.attemptId, "--retry"]);
    expect(late.code).toBe(3);
    expect(late.stderr).toMatch(/only a run blocked on an ambiguous effect/);
    await stopProcess(host);
  });

  it("a cancel inside the action keeps it ambiguous until the operator records a verdict", async () => {
    home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000", PI_WORKFLOWS_KILL_GRACE_MS: "300" });
    const project = join(home.root, "project");
    mkdirSync(project, { recursive: true });
    const marker = join(project, "deploys.log");
    writeFileSync(marker, "");
    writeFileSync(join(project, "deploy.workflow.ts"), workflow(marker));
    const host = await startHostProcess(home.env);
    client ??= createHostClient({ env: home.env, autoStart: false });
    const { run } = await client.call("run.start", {
      payload: { workflow: "deploy.workflow.ts", cwd: project },
    });
    await waitFor(() => lines(marker) === 1, "deploy to start", 20_000);
    expect((await cli(["cancel", run.runId])).code).toBe(0);
    const status = await runJson(run.runId);
    expect(status.run.state).toBe("cancelled");
    const [effect] = status.ambiguousEffects;
    expect(effect).toMatchObject({ nodeId: "deploy", managed: false });
    const text = await cli(["status", run.runId]);
    expect(text.stdout).toContain(
      `pi-workflows effect resolve ${run.runId.slice(0, 12)} ${effect.attemptId} --not-applied`,
    );
    expect((await cli(["host", "status", "--json"])).stdout).toContain('"ambiguousEffects":1');

    const retry = await cli(["effect", "resolve", run.runId, effect.attemptId, "--retry"]);
    expect(retry.code).toBe(3);
    expect(retry.stderr.trim().split("\n")).toHaveLength(1);
    expect(retry.stderr).toContain("the run has ended and nothing of it runs again");
    const recorded = await cli(["effect", "resolve", run.runId, effect.effectId, "--not-applied"]);
    expect(recorded.code, recorded.stderr).toBe(0);
    expect(recorded.stdout).toContain("the run had ended, so nothing runs again");
    expect((await runJson(run.runId)).run).toMatchObject({
      state: "cancelled",
      revision: status.run.revision,
    });
    expect((await runJson(run.runId)).ambiguousEffects ?? []).toEqual([]);
    expect((await cli(["host", "status", "--json"])).stdout).toContain('"ambiguousEffects":0');
    expect(lines(marker)).toBe(1);
    await stopProcess(host);
  });
});
