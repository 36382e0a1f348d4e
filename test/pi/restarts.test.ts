/**
 * Interactive runs survive their processes: Pi SIGKILLed and restarted on the same session while
 * a step is pending shows that step exactly once and the run completes, its usage from both Pi
 * processes counted once (so does a `/reload`); the host SIGKILLed while
 * a step is pending and the validation child SIGKILLed while it checks a submission lose nothing
 * and present nothing twice, and `doctor` finds the state consistent. A Pi restarted while its
 * run waits on a person finds that run again from its session branch. A Pi SIGKILLed while its
 * submission validates: the restarted Pi goes on to the next step and does not call the accepted
 * step dropped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startPi, stopAllPi } from "../support/pi-rpc.ts";
import { queryState, waitForRunState, waitForState } from "../support/state-db.ts";
import { stepResponder, submitCall } from "../support/step-responder.ts";
import {
  cli,
  createWorld,
  destroyWorld,
  type E2eWorld,
  isNotice,
  sessionEntries,
  startWorkflow,
  stepEntries,
} from "./pi-e2e.ts";

const ECHO_PACKAGE = fileURLToPath(new URL("./fixtures/echo-package", import.meta.url));
const PLAN = { steps: ["write the README", "link it"] };
const REVIEW = { risk: "none", ok: true };

/** The first model request of `step` waits for `release()`; every other one answers. */
function gatedStep(step: "draft" | "review") {
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let gated = false;
  const script = stepResponder({
    output: (c) => (c.step === "draft" ? PLAN : REVIEW),
    decide: (request, contract) => {
      if (gated || contract?.step !== step || request.lastRole !== "user") return undefined;
      gated = true;
      return gate.then(() => submitCall(contract, step === "draft" ? PLAN : REVIEW));
    },
  });
  return { script, release: () => release() };
}

function stepRequest(world: E2eWorld, runId: string, step: string) {
  return queryState(
    world.sandbox.stateDir,
    "SELECT request_id, presentation_entry_id FROM interactive_requests WHERE run_id = ? AND node_id = ?",
    runId,
    step,
  )[0];
}

describe("Pi restarted on the same session while a step is pending", () => {
  let world: E2eWorld;
  beforeAll(async () => {
    world = await createWorld();
    await world.sandbox.install(ECHO_PACKAGE);
  });
  afterAll(async () => {
    await stopAllPi();
    await destroyWorld(world);
  });

  it("shows the step exactly once and completes the run", async () => {
    const sessionId = randomUUID();
    // The second step reports progress (a model call the host records with the update's usage),
    // then its next call waits: by then Pi has written the session file (it does so once the
    // session has an assistant message), so the step's entry survives the kill.
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let updated = false;
    let gated = false;
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? PLAN : REVIEW),
      decide: (request, contract) => {
        if (contract?.step !== "review") return undefined;
        if (!updated && request.lastRole === "user") {
          updated = true;
          const update = { type: "status", data: "reading the plan" };
          return {
            kind: "tool",
            name: "workflow",
            args: { action: "update", step: "review", attempt: contract.attempt, update },
          };
        }
        if (updated && !gated && request.lastRole === "tool") {
          gated = true;
          return gate.then(() => submitCall(contract, REVIEW));
        }
        return undefined;
      },
    });
    const first = await startPi(world.sandbox, { sessionId });
    const runId = await startWorkflow(first, "two-turn-agent add a README");
    await world.model.waitForRequest((r) =>
      r.lastToolResult?.startsWith("Update recorded") ?? false
    );
    const presented = await waitForState(
      "the step's session entry to be recorded",
      () => stepRequest(world, runId, "review")?.presentation_entry_id as string | null,
    );
    const reviewTokens = () =>
      queryState(
        world.sandbox.stateDir,
        "SELECT usage_tokens FROM node_attempts WHERE run_id = ? AND node_id = 'review'",
        runId,
      )[0].usage_tokens;
    // The update carried the step's first model call (the fake's 10 input + 5 output tokens).
    expect(reviewTokens()).toBe(15);
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    // The model answers from now on; the restarted Pi adopts the shown step and continues it.
    release();
    const second = await startPi(world.sandbox, { sessionId });
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const entries = await sessionEntries(second);
    const shown = stepEntries(entries);
    const { request_id: reviewId } = stepRequest(world, runId, "review");
    expect(shown.get(reviewId as string)).toEqual([presented]);
    expect([...shown.values()].every((ids) => ids.length === 1)).toBe(true);
    expect(shown.size).toBe(2);
    // Continuing it took a hidden nudge, not a second visible step message.
    const resume = entries.filter((e) => e.details?.kind === "resume");
    expect(resume).toHaveLength(1);
    // The first Pi's update call and the second Pi's submit call, each once (the call the kill
    // cut off never ended: Pi recorded no usage for it).
    expect(reviewTokens()).toBe(30);
    await second.stop();
  });

  it("after a /reload, adopts the pending step and continues it without showing it again", async () => {
    let hung = false;
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? PLAN : REVIEW),
      decide: (request, contract) => {
        if (hung || contract?.step !== "draft" || request.lastRole !== "user") return undefined;
        hung = true;
        return { kind: "hang" };
      },
    });
    const pi = await startPi(world.sandbox);
    const runId = await startWorkflow(pi, "two-turn-agent add a README");
    await world.model.waitForRequest((r) => r.lastUserText.startsWith("Write a short plan"));
    const presented = await waitForState(
      "the step's session entry to be recorded",
      () => stepRequest(world, runId, "draft")?.presentation_entry_id as string | null,
    );
    // Escape: the turn stops and the step is held; Pi is idle, as /reload needs.
    const aborted = pi.records.length;
    await pi.command({ type: "abort" });
    await pi.waitForSettled(aborted);

    await pi.prompt("/echo-reload", 60_000);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const entries = await sessionEntries(pi);
    const { request_id: draftId } = stepRequest(world, runId, "draft");
    expect(stepEntries(entries).get(draftId as string)).toEqual([presented]);
    const resumed = entries.filter((e) =>
      e.details?.kind === "resume" && e.details.interactionId === draftId
    );
    expect(resumed).toHaveLength(1);
    await pi.stop();
  });

  it("finds its own step message when Pi died before the host recorded it", async () => {
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? PLAN : REVIEW),
      // The first Pi's own turn on the step must not submit: on a loaded machine its recording
      // of the entry (where it is killed) can run after that tool call, and the submission would
      // then come from the dead Pi. Only the second Pi's nudge gets the submit.
      decide: (request, contract) =>
        contract?.step === "draft" && request.lastRole !== "tool" &&
          !request.lastUserText.includes("shown earlier is still waiting")
          ? { kind: "text", text: "Reading the task first." }
          : undefined,
    });
    const sessionId = randomUUID();
    const crashOnce = join(tmpdir(), `piw-crash-once-${randomUUID()}`);
    const first = await startPi(world.sandbox, {
      sessionId,
      env: {
        PI_WORKFLOWS_CRASH_AT: "extension.step.beforePresent",
        PI_WORKFLOWS_CRASH_ONCE: crashOnce,
      },
    });
    try {
      // Pi writes the session file once it holds an assistant message; the step entry follows.
      const greeted = first.records.length;
      await first.prompt("hello");
      await first.waitForSettled(greeted);
      const runId = await startWorkflow(first, "two-turn-agent add a README");
      // The extension kills Pi right before `interaction.present` of the first step.
      expect(await first.exited).toEqual({ code: null, signal: "SIGKILL" });
      expect(stepRequest(world, runId, "draft").presentation_entry_id).toBeNull();

      const second = await startPi(world.sandbox, { sessionId });
      expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
        "completed",
      );
      const entries = await sessionEntries(second);
      const { request_id: draftId, presentation_entry_id: recorded } = stepRequest(
        world,
        runId,
        "draft",
      );
      // The one message the dead Pi showed is the recorded presentation; nothing was resent.
      expect(stepEntries(entries).get(draftId as string)).toEqual([recorded]);
      const resumed = entries.filter((e) =>
        e.details?.kind === "resume" && e.details.interactionId === draftId
      );
      expect(resumed).toHaveLength(1);
      await second.stop();
    } finally {
      rmSync(crashOnce, { force: true });
    }
  });

  it("knows its run waiting on a person again, without a run id", async () => {
    world.script = () => ({ kind: "text", text: "Hello." });
    const sessionId = randomUUID();
    const first = await startPi(world.sandbox, { sessionId });
    // Pi writes the session file once it holds an assistant message; the decision entry follows.
    const greeted = first.records.length;
    await first.prompt("hello");
    await first.waitForSettled(greeted);
    const runId = await startWorkflow(first, 'human-decision --input-json {"version":"2.0.0"}');
    await waitForRunState(world.sandbox.stateDir, runId, ["waiting"]);
    await waitForState("the decision message", async () => {
      const entries = await sessionEntries(first);
      return entries.find((e) => e.details?.kind === "decision");
    });
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    const second = await startPi(world.sandbox, { sessionId });
    const answerFrom = second.records.length;
    await second.prompt("/workflow answer approve the release");
    await second.waitFor((r) => isNotice(r, /^Answered decision approval/), {
      from: answerFrom,
    });
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const decisions = (await sessionEntries(second)).filter((e) => e.details?.kind === "decision");
    expect(decisions).toHaveLength(1);
    await second.stop();
  });

  it("SIGKILLed while its submission validates: the restarted Pi goes on, nothing called dropped", async () => {
    // The draft's validate waits for a gate file the test creates once the restarted Pi has
    // taken the step (its footer shows the run): the acceptance then closes a step that Pi holds.
    const gateFile = join(world.sandbox.root, `validate-gate-${randomUUID()}`);
    writeFileSync(
      join(world.sandbox.project, ".pi", "workflows", "gated-validate.workflow.ts"),
      `import { existsSync } from "node:fs";
import { agent, compute, defineWorkflow } from "@osolmaz/pi-workflows";
const pause = new Int32Array(new SharedArrayBuffer(4));
export default defineWorkflow({
  name: "gated-validate",
  startAt: "draft",
  nodes: {
    draft: agent({
      prompt: "Write a plan",
      validate: () => {
        const until = Date.now() + 50_000;
        while (!existsSync(${JSON.stringify(gateFile)}) && Date.now() < until) {
          Atomics.wait(pause, 0, 0, 20);
        }
      },
    }),
    review: agent({ prompt: "Review the plan" }),
    done: compute({ run: ({ outputs }) => outputs }),
  },
  edges: [{ from: "draft", to: "review" }, { from: "review", to: "done" }],
});
`,
    );
    const sessionId = randomUUID();
    const first = await startPi(world.sandbox, { sessionId });
    // Pi writes the session file once it holds an assistant message.
    const greeted = first.records.length;
    world.script = () => ({ kind: "text", text: "Hello." });
    await first.prompt("hello");
    await first.waitForSettled(greeted);
    world.script = stepResponder({ output: (c) => (c.step === "draft" ? PLAN : REVIEW) });
    const runId = await startWorkflow(first, "gated-validate");
    await waitForState("the draft's submission to be validating", () =>
      queryState(
        world.sandbox.stateDir,
        "SELECT s.outcome FROM interactive_submissions s JOIN interactive_requests r " +
          "USING (request_id) WHERE r.run_id = ? AND s.outcome = 'validating'",
        runId,
      ).length > 0);
    expect(await first.kill("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });

    const second = await startPi(world.sandbox, { sessionId });
    await second.waitFor(
      (r) =>
        r.type === "extension_ui_request" && r.method === "setStatus" &&
        /^wf gated-validate waiting draft/.test(String(r.statusText ?? r.text ?? "")),
      { what: "the restarted Pi's footer for the validating step" },
    );
    writeFileSync(gateFile, "");
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    // One model turn for the draft (the dead Pi's), one for the review, no reminder or resend.
    const shown = stepEntries(await sessionEntries(second));
    expect([...shown.values()].map((ids) => ids.length)).toEqual([1, 1]);
    // Let the restarted Pi see the run's end, then check what it told the person.
    await second.waitFor((r) => isNotice(r, /^Workflow gated-validate completed/), {
      what: "the completion notice",
    });
    const notices = second.uiRequests().filter((r) => r.method === "notify").map((r) =>
      String(r.message)
    );
    expect(notices.filter((n) => /no longer pending/.test(n))).toEqual([]);
    await second.stop();
  });
});

describe("the host and the validation child SIGKILLed mid-step", () => {
  let world: E2eWorld;
  const crashOnce = join(tmpdir(), `piw-crash-once-${randomUUID()}`);
  afterAll(async () => {
    await stopAllPi();
    await destroyWorld(world);
    rmSync(crashOnce, { force: true });
  });

  it("loses nothing, presents nothing twice, and leaves doctor clean", async () => {
    world = await createWorld({
      // The first validation child SIGKILLs itself before it reports its verdict.
      PI_WORKFLOWS_CRASH_AT: "worker.interaction.accepted.beforeSend",
      PI_WORKFLOWS_CRASH_ONCE: crashOnce,
      // The default host lease: the next host takes over at once from the SIGKILLed one, its
      // process being gone; a 1.5 s lease could lapse in a loaded pause and stop the next host
      // too (host.claimLost reason=expired) with the run unfinished.
    });
    const draft = gatedStep("draft");
    world.script = draft.script;
    const pi = await startPi(world.sandbox);
    const runId = await startWorkflow(pi, "two-turn-agent add a README");
    await world.model.waitForRequest((r) => r.lastUserText.startsWith("Write a short plan"));
    await waitForState(
      "the step to be presented",
      () => stepRequest(world, runId, "draft")?.presentation_entry_id,
    );

    const [host] = world.sandbox.hostPids();
    expect(host).toBeGreaterThan(0);
    process.kill(host, "SIGKILL");
    await waitForState("the host to be gone", () => !world.sandbox.hostPids().includes(host));

    // The model submits now: the extension starts a new host, whose first validation child dies.
    draft.release();
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"], 90_000))
      .toBe("completed");
    const submissions = queryState(
      world.sandbox.stateDir,
      "SELECT s.outcome, s.error_message FROM interactive_submissions s JOIN interactive_requests r " +
        "USING (request_id) WHERE r.run_id = ? AND r.node_id = 'draft' ORDER BY s.submitted_at",
      runId,
    );
    expect(submissions.map((s) => s.outcome)).toEqual(["rejected", "accepted"]);
    const shown = stepEntries(await sessionEntries(pi));
    expect(shown.size).toBe(2);
    expect([...shown.values()].every((ids) => ids.length === 1)).toBe(true);

    const doctor = await cli(world, ["doctor", "--json"]);
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
  });
});
