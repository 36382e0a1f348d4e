/**
 * A built-in started from a Pi session (interactive): `/workflow sanity-check` in the real Pi
 * with the extension installed the way users install it. The run's agent group still runs each
 * reviewer as its own headless Pi child (the Pi the worker finds through the state directory's
 * config.json), offered only read-only tools; the joined verdicts arrive in the session as the
 * run's final notification, without a model turn.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FakeModel, startFakeModel } from "../../support/fake-model.ts";
import { createPiSandbox, PI_CLI, type PiSandbox, REPO_ROOT } from "../../support/pi-sandbox.ts";
import { type PiRpc, startPi, stopAllPi } from "../../support/pi-rpc.ts";
import { stepResponder } from "../../support/step-responder.ts";

const OUTBOX_TYPE = "pi-workflows-outbox";

describe("a built-in started from Pi", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;
  let pi: PiRpc;

  beforeAll(async () => {
    model = await startFakeModel({
      lifetimeMs: 300_000,
      script: stepResponder({
        output: (contract) =>
          contract.step.startsWith("review.")
            ? { verdict: "keep", summary: `${contract.step} is fine`, findings: [] }
            : { ok: true },
      }),
    });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    const git = (...args: string[]) =>
      execFileSync("git", args, { cwd: sandbox.project, env: sandbox.env });
    git("init", "-q", "-b", "main");
    git("config", "user.email", "test@example.invalid");
    git("config", "user.name", "Test");
    writeFileSync(join(sandbox.project, "notes.txt"), "one\n");
    git("add", "-A");
    git("commit", "-q", "-m", "initial");
    writeFileSync(join(sandbox.project, "notes.txt"), "one\ntwo\n");
    mkdirSync(sandbox.stateDir, { recursive: true });
    writeFileSync(join(sandbox.stateDir, "config.json"), JSON.stringify({ pi: PI_CLI }));
    await sandbox.install(REPO_ROOT);
    pi = await startPi(sandbox, { sessionId: "builtins-session" });
  });

  afterAll(async () => {
    await stopAllPi();
    await sandbox?.cleanup();
    await model?.close();
  });

  it("/workflow sanity-check reviews in headless children and notifies the session", async () => {
    const from = pi.records.length;
    const modelFrom = model.requests.length;
    const response = await pi.prompt('/workflow sanity-check --input-json {"reviewers":2}', 60_000);
    expect(response.data).toEqual({ disposition: "handled" });
    const note = await pi.waitFor(
      (r) =>
        r.type === "message_end" &&
        (r.message as { customType?: string })?.customType === OUTBOX_TYPE &&
        String((r.message as { content?: unknown }).content).includes("Sanity check:"),
      { from, timeoutMs: 120_000, what: "the sanity-check notification" },
    );
    const content = String((note.message as { content: string }).content);
    expect(content).toMatch(/^Workflow sanity-check — final:\nSanity check: keep\n/);
    expect((note.message as { display: boolean }).display).toBe(true);
    expect(content).toContain("correctness: keep: review.correctness is fine");
    expect(content).toContain("simplicity: keep: review.simplicity is fine");
    // Two reviewer sessions, each offered only the read-only tools and the workflow tool.
    const reviewers = model.requests.slice(modelFrom).filter((r) =>
      r.lastUserText.includes("Your lens:")
    );
    expect(reviewers.length).toBe(2);
    for (const r of reviewers) {
      expect([...r.toolNames].sort()).toEqual(["find", "grep", "ls", "read", "workflow"]);
      expect(r.lastUserText).toContain("+two");
    }
  }, 180_000);
});
