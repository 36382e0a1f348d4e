/**
 * Interactive runs in the real Pi (one Pi process for the whole file, runs one after another as
 * one session allows): every agent step runs in the origin session and the SQLite rows are what
 * the spec says; the model's update shows in the widget; a model decision is routed by its
 * validated choice and an assistant message follows; a rejected submission then a corrected one
 * in the same request; an agent step that times out with no worker alive follows its
 * `$result.outcome` edge, and a next step pending before the turn stopped for the closed one has
 * settled is sent after it; a protected human decision is answered by a person, never the tool;
 * an ordinary checkpoint by the tool; a run that failed is fixed and forked with `/workflow
 * rerun`, whose next step comes to this session while its adopted agent step is not asked again;
 * and nothing private reaches `host status` or the host log.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { messageText } from "../support/fake-model.ts";
import { type PiRpc, startPi, stopAllPi } from "../support/pi-rpc.ts";
import { queryState, waitForRunState, waitForState } from "../support/state-db.ts";
import {
  isAcceptance,
  stepResponder,
  submitCall,
  updateContractIn,
} from "../support/step-responder.ts";
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

const PLAN = { steps: ["write the README", "link it"] };

/** A model that calls the tool with `args` when the user says `prompt`, and ends after it. */
function toolWhenAsked(prompt: string, args: Record<string, unknown>) {
  return stepResponder({
    decide: (request) => {
      if (request.lastRole === "tool") return { kind: "text", text: "Done." };
      if (request.lastUserText === prompt) return { kind: "tool", name: "workflow", args };
      return undefined;
    },
  });
}

/** Sends `prompt`, waits for the turn to settle, and returns its workflow tool result. */
async function toolResultOf(pi: PiRpc, prompt: string) {
  const from = pi.records.length;
  await pi.prompt(prompt);
  await pi.waitForSettled(from);
  const end = pi.records.slice(from).find((r) =>
    r.type === "tool_execution_end" && r.toolName === "workflow"
  ) as { isError?: boolean; result?: { content: { text: string }[] } } | undefined;
  return { isError: end?.isError === true, text: end?.result?.content[0].text ?? "" };
}

function runOutput(stateDir: string, runId: string): unknown {
  const [run] = queryState(stateDir, "SELECT output_json FROM runs WHERE run_id = ?", runId);
  return JSON.parse(run.output_json as string);
}
const REVIEW = { risk: "none", ok: true };

describe("interactive runs in the real Pi", () => {
  let world: E2eWorld;
  let pi: PiRpc;
  let sessionId: string;
  const runs: string[] = [];

  beforeAll(async () => {
    world = await createWorld();
    pi = await startPi(world.sandbox);
    const state = await pi.command({ type: "get_state" });
    sessionId = (state.data as { sessionId: string }).sessionId;
  });

  afterAll(async () => {
    await stopAllPi();
    await destroyWorld(world);
  });

  it("runs every agent step in the origin session and commits the rows the spec names", async () => {
    world.script = stepResponder({ output: (c) => (c.step === "draft" ? PLAN : REVIEW) });
    const fromRequest = world.model.requests.length;
    const runId = await startWorkflow(pi, "two-turn-agent add a README");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );

    // The exact node prompt reached the model as the session's message.
    const prompts = world.model.requests.slice(fromRequest).filter((r) => r.lastRole === "user")
      .map((r) => r.lastUserText);
    expect(prompts[0]).toMatch(/^Write a short plan \(3-5 steps\) for: add a README\n\n---\n/);
    expect(prompts.some((p) => p.startsWith("Review this plan and name its biggest risk:"))).toBe(
      true,
    );
    // The next step went out before the draft's submit returned: Pi delivered it right after
    // that tool result, in the same agent run (no turn that only ends "accepted" in between).
    const review = world.model.requests.slice(fromRequest).find((r) =>
      r.lastRole === "user" && r.lastUserText.startsWith("Review this plan")
    )!;
    const beforeReview = review.messages.at(-2)!;
    expect(beforeReview.role).toBe("tool");
    expect(messageText(beforeReview)).toBe(
      'Output accepted for step "draft". The next workflow step follows: do it now.',
    );

    const db = (sql: string) => queryState(world.sandbox.stateDir, sql, runId);
    const requests = db(
      "SELECT request_id, node_id, target_session_id, kind, status, accepted_submission_id, " +
        "reminders, presentation_entry_id FROM interactive_requests WHERE run_id = ? ORDER BY created_at",
    );
    expect(requests.map((r) => [r.node_id, r.kind, r.status, r.reminders])).toEqual([
      ["draft", "agent", "settled", 0],
      ["review", "agent", "settled", 0],
    ]);
    for (const request of requests) expect(request.target_session_id).toBe(sessionId);

    const submissions = db(
      "SELECT s.submission_id, s.request_id, s.idempotency_key, s.outcome FROM " +
        "interactive_submissions s JOIN interactive_requests r USING (request_id) " +
        "WHERE r.run_id = ? ORDER BY s.submitted_at",
    );
    expect(submissions.map((s) => s.outcome)).toEqual(["accepted", "accepted"]);
    expect(submissions.map((s) => s.submission_id)).toEqual(
      requests.map((r) => r.accepted_submission_id),
    );
    // The idempotency key is the model's tool-call id.
    const toolCalls = pi.records.filter((r) =>
      r.type === "tool_execution_start" && r.toolName === "workflow"
    ).map((r) => r.toolCallId);
    for (const s of submissions) expect(toolCalls).toContain(s.idempotency_key);

    const attempts = db(
      "SELECT node_id, node_kind, state FROM node_attempts WHERE run_id = ? ORDER BY sequence",
    );
    expect(attempts.map((a) => [a.node_id, a.node_kind, a.state])).toEqual([
      ["draft", "agent", "ok"],
      ["review", "agent", "ok"],
      ["summary", "compute", "ok"],
    ]);
    const events = db("SELECT type FROM events WHERE run_id = ? ORDER BY seq").map((e) => e.type);
    const steps = events.filter((t) =>
      ["node.started", "run.waiting", "interaction.accepted", "run.completed"].includes(
        t as string,
      )
    );
    expect(steps).toEqual([
      "node.started",
      "run.waiting",
      "interaction.accepted",
      "node.started",
      "run.waiting",
      "interaction.accepted",
      "node.started",
      "run.completed",
    ]);
    expect(events.filter((t) => t === "interaction.presented")).toHaveLength(2);

    // Each request is shown exactly once, and the host holds that entry's id.
    const entries = await sessionEntries(pi);
    const shown = stepEntries(entries);
    for (const request of requests) {
      expect(shown.get(request.request_id as string)).toEqual([request.presentation_entry_id]);
    }
  });

  it("shows the model's update of a step in the progress widget", async () => {
    const note = "drafting the plan";
    const from = pi.records.length;
    const widgetNote = () =>
      pi.uiRequests(from).find((r) =>
        r.method === "setWidget" &&
        (r.widgetLines as string[] | undefined)?.some((line) => line.includes(note))
      );
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? PLAN : REVIEW),
      decide: (request, contract) => {
        if (contract?.step !== "draft") return undefined;
        if (request.lastRole === "user") {
          const update = updateContractIn(request.lastUserText)!;
          return {
            kind: "tool",
            name: "workflow",
            args: { ...update, update: { type: "status", key: "note", data: { message: note } } },
          };
        }
        if (request.lastRole === "tool" && request.lastToolResult?.startsWith("Update recorded")) {
          // Submit once the widget shows the note (the step is still pending until then).
          return waitForState("the note in the widget", () => widgetNote())
            .then(() => submitCall(contract, PLAN));
        }
        return undefined;
      },
    });
    const runId = await startWorkflow(pi, "two-turn-agent add a changelog");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const lines = widgetNote()!.widgetLines as string[];
    // The step's line: state, kind, node, elapsed, the model's note (what a step used is shown
    // once it ended, progress-view.ts; the optional tail tolerates an open step's usage).
    expect(lines).toContainEqual(
      expect.stringMatching(/^◐ ● draft {2}\S+ {2}drafting the plan( {2}\S+ tokens.*)?$/),
    );
  });

  it("routes a model decision by its validated choice and sends the assistant message", async () => {
    const message = "Yes: the release ships today.";
    world.script = stepResponder({
      output: (c, _request, rejections) =>
        c.step === "pick" ? { route: rejections === 0 ? "maybe" : "yes" } : { text: message },
    });
    const runId = await startWorkflow(pi, "talk");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const submissions = queryState(
      world.sandbox.stateDir,
      "SELECT r.node_id, r.kind, s.outcome, s.error_message FROM interactive_submissions s " +
        "JOIN interactive_requests r USING (request_id) WHERE r.run_id = ? ORDER BY s.submitted_at",
      runId,
    );
    expect(submissions.map((s) => [s.node_id, s.kind, s.outcome])).toEqual([
      ["pick", "agent", "rejected"],
      ["pick", "agent", "accepted"],
      ["say", "assistantMessage", "accepted"],
    ]);
    expect(submissions[0].error_message).toMatch(/yes/);
    const prompts = world.model.requests.filter((r) => r.lastRole === "user").map((r) =>
      r.lastUserText
    );
    expect(prompts.some((p) => p.startsWith("Tell the user the answer: yes"))).toBe(true);
    expect(runOutput(world.sandbox.stateDir, runId)).toMatchObject({ text: message });
  });

  it("keeps one request through a rejected submission and a corrected one", async () => {
    world.script = stepResponder({
      output: (c, _request, rejections) =>
        c.step === "draft" ? (rejections === 0 ? { steps: "one big step" } : PLAN) : REVIEW,
    });
    const fromRequest = world.model.requests.length;
    const runId = await startWorkflow(pi, "two-turn-agent add a changelog");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const draft = queryState(
      world.sandbox.stateDir,
      "SELECT r.request_id, r.status, s.outcome, s.error_message FROM interactive_requests r " +
        "JOIN interactive_submissions s USING (request_id) WHERE r.run_id = ? AND r.node_id = 'draft' " +
        "ORDER BY s.submitted_at",
      runId,
    );
    expect(draft.map((s) => s.outcome)).toEqual(["rejected", "accepted"]);
    expect(new Set(draft.map((s) => s.request_id)).size).toBe(1);
    expect(draft[0].error_message).toContain('send {"steps": ["step one", "step two"]}');
    // The model read the node's actionable error as the tool result, in the same turn.
    const retry = world.model.requests.slice(fromRequest).find((r) =>
      r.lastRole === "tool" && !isAcceptance(r.lastToolResult)
    );
    expect(retry?.lastToolResult).toContain('send {"steps": ["step one", "step two"]}');

    // Each attempt used what the session's assistant messages since its step message used (the
    // fake reports 10 input and 5 output tokens per call; the model has no price): draft the
    // rejected and the accepted call, review its one call (the text after its acceptance is
    // nobody's step).
    const usage = queryState(
      world.sandbox.stateDir,
      "SELECT node_id, usage_json FROM node_attempts WHERE run_id = ? ORDER BY sequence",
      runId,
    ).map((a) => [a.node_id, a.usage_json === null ? null : JSON.parse(a.usage_json as string)]);
    const calls = (n: number) => ({
      input: 10 * n,
      output: 5 * n,
      cacheRead: 0,
      cacheWrite: 0,
      cost: null,
      provider: "fake",
      model: "fake-model",
    });
    expect(usage).toEqual([["draft", calls(2)], ["review", calls(1)], ["summary", null]]);
    const status = JSON.parse((await cli(world, ["status", runId, "--json"])).stdout);
    expect(status.run.spend).toEqual({ tokens: 45, cost: null });
  });

  it("times an agent step out with no worker alive and follows its $result.outcome edge", async () => {
    world.script = stepResponder({
      decide: (request) =>
        request.lastUserText.startsWith("Take your time") ? { kind: "hang" } : undefined,
    });
    const from = pi.records.length;
    const fromRequest = world.model.requests.length;
    const runId = await startWorkflow(pi, "slow-step");
    runs.push(runId);
    await world.model.waitForRequest((r) => r.lastUserText.startsWith("Take your time"), {
      from: fromRequest,
    });
    // The step waits in Pi; its worker exits and none is alive until the deadline.
    await waitForState("the run's worker to exit", () =>
      queryState(
        world.sandbox.stateDir,
        "SELECT count(*) AS n FROM run_workers WHERE run_id = ? AND status IN ('starting', 'live')",
        runId,
      )[0].n === 0, 3_000);
    const [attempt] = queryState(
      world.sandbox.stateDir,
      "SELECT state FROM node_attempts WHERE run_id = ? AND node_id = 'slow'",
      runId,
    );
    expect(attempt.state).toBe("waiting");

    expect(
      await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed", "timed_out"]),
    ).toBe(
      "completed",
    );
    const attempts = queryState(
      world.sandbox.stateDir,
      "SELECT node_id, state FROM node_attempts WHERE run_id = ? ORDER BY sequence",
      runId,
    );
    expect(attempts.map((a) => [a.node_id, a.state])).toEqual([
      ["slow", "timed_out"],
      ["late", "ok"],
    ]);
    expect(runOutput(world.sandbox.stateDir, runId)).toEqual({ timedOut: true });
    const [request] = queryState(
      world.sandbox.stateDir,
      "SELECT status FROM interactive_requests WHERE run_id = ?",
      runId,
    );
    expect(request.status).toBe("timedOut");
    // The turn still working on the closed step was stopped.
    await pi.waitFor((r) => r.type === "agent_settled" && r.aborted === true, { from });
  });

  it("sends the next step after the turn it stopped has settled, not into that turn", async () => {
    world.script = stepResponder({
      decide: (request) =>
        request.lastUserText.startsWith("Work on this until") ? { kind: "hang" } : undefined,
    });
    const from = pi.records.length;
    const fromRequest = world.model.requests.length;
    const runId = await startWorkflow(pi, "next-after-timeout");
    runs.push(runId);
    await world.model.waitForRequest((r) => r.lastUserText.startsWith("Work on this until"), {
      from: fromRequest,
    });
    // Pi frozen while the step times out and the next one is requested: the first claim after
    // it thaws finds the closed step gone and the next one pending at once, while the stopped
    // turn is still running (the order a loaded machine produced now and then).
    process.kill(pi.pid, "SIGSTOP");
    try {
      await waitForState("the next step's request", () =>
        queryState(
          world.sandbox.stateDir,
          "SELECT 1 FROM interactive_requests WHERE run_id = ? AND node_id = 'after' AND " +
            "status = 'pending'",
          runId,
        ).length === 1);
    } finally {
      process.kill(pi.pid, "SIGCONT");
    }
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"], 30_000))
      .toBe("completed");
    // The stopped turn settled aborted; the next step was not put on hold as if Escape did it.
    await pi.waitFor((r) => r.type === "agent_settled" && r.aborted === true, { from });
    expect(pi.records.slice(from).some((r) => isNotice(r, /is on hold/))).toBe(false);
    const after = world.model.requests.slice(fromRequest).filter((r) =>
      r.lastRole === "user" && r.lastUserText.startsWith("Now finish up.")
    );
    expect(after).toHaveLength(1);
  });

  it("shows a human decision without a model turn; only a person answers it", async () => {
    world.script = toolWhenAsked("Please answer the release decision.", {
      action: "answer",
      input: { choice: "approve" },
    });
    const runId = await startWorkflow(pi, 'human-decision --input-json {"version":"2.0.0"}');
    runs.push(runId);
    await waitForRunState(world.sandbox.stateDir, runId, ["waiting"]);
    const decision = await waitForState("the decision message", async () => {
      const entries = await sessionEntries(pi);
      return entries.find((e) => e.details?.kind === "decision");
    });
    expect(decision).toBeDefined();
    const requestsBefore = world.model.requests.length;

    // One run per session: a second start is refused while this one waits.
    const busyFrom = pi.records.length;
    await pi.prompt("/workflow two-turn-agent more");
    await pi.waitFor(
      (r) => isNotice(r, new RegExp(`already has an active workflow run \\(${runId}\\)`)),
      {
        from: busyFrom,
      },
    );
    expect(world.model.requests.length).toBe(requestsBefore);

    // The tool's answer is refused for a protected decision.
    const refused = await toolResultOf(pi, "Please answer the release decision.");
    expect(refused.isError).toBe(true);
    expect(refused.text).toMatch(/protected human decision: only a person/);
    expect(
      queryState(world.sandbox.stateDir, "SELECT state FROM runs WHERE run_id = ?", runId)[0].state,
    )
      .toBe("waiting");

    // A person answers with /workflow answer.
    const answerFrom = pi.records.length;
    await pi.prompt("/workflow answer approve the release");
    await pi.waitFor((r) => isNotice(r, /^Answered decision approval/), { from: answerFrom });
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    expect(runOutput(world.sandbox.stateDir, runId)).toEqual({ released: "2.0.0" });
  });

  it("lets the model answer an ordinary checkpoint through the tool", async () => {
    world.script = toolWhenAsked("Approve the plan checkpoint.", {
      action: "answer",
      input: { approved: true, note: "go ahead" },
    });
    const runId = await startWorkflow(pi, "checkpoint rename the flag");
    runs.push(runId);
    await waitForRunState(world.sandbox.stateDir, runId, ["waiting"]);
    const answered = await toolResultOf(pi, "Approve the plan checkpoint.");
    expect(answered.isError).toBe(false);
    expect(answered.text).toMatch(/^Answered checkpoint review/);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    expect(runOutput(world.sandbox.stateDir, runId)).toEqual({ applied: true, note: "go ahead" });
  });

  it("starts the model's queued run after its turn; a person checks, pauses, resumes and cancels it", async () => {
    world.script = toolWhenAsked("Start the checkpoint workflow.", {
      action: "start",
      workflow: "checkpoint",
      input: { task: "rename the flag" },
    });
    const from = pi.records.length;
    const queued = await toolResultOf(pi, "Start the checkpoint workflow.");
    expect(queued.isError).toBe(false);
    expect(queued.text).toMatch(/^Queued workflow checkpoint: it starts when this turn ends/);
    const started = await pi.waitFor((r) => isNotice(r, /^Started workflow checkpoint /), {
      from,
    });
    // Deferred: the run started after the turn that queued it settled.
    const settled = pi.records.findIndex((r, i) => i >= from && r.type === "agent_settled");
    expect(pi.records.indexOf(started)).toBeGreaterThan(settled);
    const runId = /\((run-[^)]+)\)/.exec(String(started.message))![1];
    runs.push(runId);
    const stateDir = world.sandbox.stateDir;
    expect(
      queryState(
        stateDir,
        "SELECT execution_mode, origin_session_id FROM run_bindings WHERE run_id = ?",
        runId,
      ),
    ).toEqual([{ execution_mode: "interactive", origin_session_id: sessionId }]);
    await waitForRunState(stateDir, runId, ["waiting"]);

    // A person drives the session's run without naming it.
    const say = async (command: string, pattern: RegExp) => {
      const at = pi.records.length;
      await pi.prompt(command);
      return await pi.waitFor((r) => isNotice(r, pattern), { from: at });
    };
    const paused = () =>
      queryState(stateDir, "SELECT paused FROM runs WHERE run_id = ?", runId)[0].paused;
    await say("/workflow status", new RegExp(`^Run ${runId} checkpoint: waiting`));
    await say("/workflow pause", new RegExp(`^Run ${runId} checkpoint: .*paused`));
    expect(paused()).toBe(1);
    await say("/workflow resume", new RegExp(`^Run ${runId} checkpoint: `));
    expect(paused()).toBe(0);
    await say("/workflow cancel", new RegExp(`^Run ${runId} checkpoint: cancel`));
    expect(await waitForRunState(stateDir, runId, ["cancelled", "completed", "failed"])).toBe(
      "cancelled",
    );
  });

  it("Escape holds the step; /workflow resume shows its contract again and the step goes on", async () => {
    // The model works on the first step message until Escape stops it; after the resume it
    // submits. The run is waiting, not paused: the host has nothing to resume.
    let stalled = false;
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? PLAN : REVIEW),
      decide: (request, contract) => {
        if (stalled || contract?.step !== "draft" || request.lastRole !== "user") return undefined;
        stalled = true;
        return { kind: "hang" };
      },
    });
    const from = world.model.requests.length;
    const runId = await startWorkflow(pi, "two-turn-agent add a changelog");
    runs.push(runId);
    await world.model.waitForRequest((r) => r.lastUserText.startsWith("Write a short plan"), {
      from,
    });
    const aborted = pi.records.length;
    await pi.command({ type: "abort" });
    await pi.waitFor((r) => isNotice(r, /^Workflow step draft is on hold; \/workflow resume/), {
      from: aborted,
    });
    const at = pi.records.length;
    await pi.prompt("/workflow resume");
    const answer = await pi.waitFor(
      (r) => isNotice(r, new RegExp(`^(Run ${runId} |/workflow: )`)),
      { from: at },
    );
    expect(answer.message).toMatch(new RegExp(`^Run ${runId} two-turn-agent: waiting`));
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const [draft] = queryState(
      world.sandbox.stateDir,
      "SELECT request_id FROM interactive_requests WHERE run_id = ? AND node_id = 'draft'",
      runId,
    );
    const shown = (await sessionEntries(pi)).filter((e) =>
      e.details?.interactionId === draft.request_id
    );
    expect(shown.map((e) => e.details?.kind)).toEqual(["step", "resume"]);
  });

  it("a model error holds the step instead of spending its reminders; /workflow resume goes on", async () => {
    // A provider outage (Pi's retries are off in the sandbox) must not fail the step as if the
    // agent had ignored it: reminders would meet the same error at once.
    let outage = true;
    const steps = stepResponder({ output: (c) => (c.step === "draft" ? PLAN : REVIEW) });
    // Only this step's requests fail: an owed turn of an earlier run answers as usual.
    world.script = (request) =>
      outage && request.lastUserText.includes("add a status page")
        ? { kind: "error", status: 503, message: "overloaded" }
        : steps(request);
    const runId = await startWorkflow(pi, "two-turn-agent add a status page");
    runs.push(runId);
    await pi.waitFor(
      (r) =>
        isNotice(
          r,
          /^Workflow step draft is on hold: the model failed \(503: .*overloaded.*\); \/workflow resume continues it$/,
        ),
      { what: "the on-hold notice" },
    );
    const request = () =>
      queryState(
        world.sandbox.stateDir,
        "SELECT request_id, status, reminders FROM interactive_requests WHERE run_id = ? AND node_id = 'draft'",
        runId,
      )[0];
    expect([request().status, request().reminders]).toEqual(["pending", 0]);
    outage = false;
    await pi.prompt("/workflow resume");
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "completed",
    );
    const shown = (await sessionEntries(pi)).filter((e) =>
      e.details?.interactionId === request().request_id
    );
    expect(shown.map((e) => e.details?.kind)).toEqual(["step", "resume"]);
  });

  it("the model cancels its own run from a step: its turn goes on to report it", async () => {
    // A step closed by someone else stops the turn working on it; one the model closed itself
    // must not: the model is to tell the user it cancelled.
    // It then cancels once more: the refusal says plainly that the run has ended.
    world.script = (request) => {
      const cancelled = /^Run (run-\S+) two-turn-agent: cancelled$/.exec(
        request.lastToolResult ?? "",
      );
      return request.lastRole === "tool" && cancelled
        ? { kind: "tool", name: "workflow", args: { action: "cancel", runId: cancelled[1] } }
        : request.lastRole === "tool"
        ? { kind: "text", text: "I cancelled the workflow as you asked." }
        : request.lastUserText.includes("add a roadmap")
        ? { kind: "tool", name: "workflow", args: { action: "cancel" } }
        : { kind: "text", text: "Nothing to do." };
    };
    const from = pi.records.length;
    const requests = world.model.requests.length;
    const runId = await startWorkflow(pi, "two-turn-agent add a roadmap");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["cancelled", "completed"])).toBe(
      "cancelled",
    );
    const reported = await world.model.waitForRequest(
      (r) => r.lastRole === "tool" && /cancelled$/.test(r.lastToolResult ?? ""),
      { from: requests },
    );
    expect(reported.lastToolResult).toBe(`Run ${runId} two-turn-agent: cancelled`);
    const again = await world.model.waitForRequest(
      (r) => r.lastRole === "tool" && /^Cannot cancel/.test(r.lastToolResult ?? ""),
      { from: requests },
    );
    expect(again.lastToolResult).toBe(`Cannot cancel run ${runId}: it has ended (cancelled)`);
    const cancelCall = await pi.waitFor(
      (r) => r.type === "tool_execution_end" && r.toolName === "workflow",
      { from, what: "the cancel tool call" },
    );
    const settled = await pi.waitFor((r) => r.type === "agent_settled", {
      from: pi.records.indexOf(cancelCall),
      what: "the end of the turn that cancelled",
    });
    expect(settled.aborted).toBe(false);
    expect(pi.uiRequests(from).filter((r) => /no longer pending/.test(String(r.message))))
      .toEqual([]);
  });

  it("reminds twice when the agent settles without submitting, then fails the attempt", async () => {
    // This model never calls the tool: it answers every step message with text.
    world.script = () => ({ kind: "text", text: "I will get to it later." });
    const runId = await startWorkflow(pi, "two-turn-agent add a license");
    runs.push(runId);
    expect(await waitForRunState(world.sandbox.stateDir, runId, ["completed", "failed"])).toBe(
      "failed",
    );
    const [request] = queryState(
      world.sandbox.stateDir,
      "SELECT request_id, status, reminders FROM interactive_requests WHERE run_id = ?",
      runId,
    );
    expect([request.status, request.reminders]).toEqual(["failed", 2]);
    const [attempt] = queryState(
      world.sandbox.stateDir,
      "SELECT state, error_code FROM node_attempts WHERE run_id = ? AND node_id = 'draft'",
      runId,
    );
    expect(attempt.state).toBe("failed");
    expect(attempt.error_code).toBe("noSubmission");
    // The three unanswered turns (the step, two reminders) count: 15 tokens each.
    const [spent] = queryState(
      world.sandbox.stateDir,
      "SELECT usage_tokens FROM node_attempts WHERE run_id = ? AND node_id = 'draft'",
      runId,
    );
    expect(spent.usage_tokens).toBe(45);
    const entries = await sessionEntries(pi);
    const mine = entries.filter((e) => e.details?.interactionId === request.request_id);
    expect(mine.map((e) => e.details?.kind)).toEqual(["step", "reminder", "reminder"]);
  });

  it("/workflow rerun forks a failed run after the file is fixed: the adopted agent step is not asked again", async () => {
    const NOTE = { note: "Faster starts." };
    world.script = stepResponder({
      output: (c) => (c.step === "draft" ? NOTE : { published: true }),
    });
    const stateDir = world.sandbox.stateDir;
    const parentId = await startWorkflow(pi, "fix-and-go");
    runs.push(parentId);
    expect(await waitForRunState(stateDir, parentId, ["completed", "failed"])).toBe("failed");
    // The failure's turn tells the model how the user goes on without repeating the draft.
    await world.model.waitForRequest(
      (r) => r.lastUserText.includes(`/workflow retry ${parentId} goes on from the failed step`),
      {
        timeoutMs: 60_000,
      },
    );
    const file = join(world.sandbox.project, ".pi", "workflows", "fix-and-go.workflow.ts");
    writeFileSync(file, readFileSync(file, "utf8").replace("STRICT = true", "STRICT = false"));

    const fromRequest = world.model.requests.length;
    const from = pi.records.length;
    await pi.prompt("/workflow rerun", 60_000);
    const notice = await pi.waitFor(
      (r) => isNotice(r, /^Forked workflow /) || isNotice(r, /^\/workflow: /),
      { from, what: "the fork notice" },
    );
    const forkId = /\((run-[^)]+)\)/.exec(String(notice.message))?.[1];
    expect(notice.message).toContain("its steps run in this session");
    expect(notice.message).toContain(
      `from ${parentId} at check (visit 1); adopted 1 step(s) without running them again; ` +
        "source: the workflow file as it is now",
    );
    runs.push(forkId!);
    expect(await waitForRunState(stateDir, forkId!, ["completed", "failed"])).toBe("completed");

    // The model was asked the fork's next step in this session, never the adopted draft again.
    const prompts = world.model.requests.slice(fromRequest).filter((r) => r.lastRole === "user")
      .map((r) => r.lastUserText);
    expect(prompts.filter((p) => p.startsWith("Publish this release note:"))).toHaveLength(1);
    expect(prompts.filter((p) => p.startsWith("Draft a one-line release note."))).toEqual([]);
    const db = (sql: string) => queryState(stateDir, sql, forkId!);
    expect(
      db(
        "SELECT node_id, state, adopted_from_attempt_id IS NOT NULL AS adopted FROM node_attempts " +
          "WHERE run_id = ? ORDER BY sequence",
      ).map((a) => [a.node_id, a.state, a.adopted]),
    ).toEqual([["draft", "ok", 1], ["check", "ok", 0], ["publish", "ok", 0]]);
    expect(
      db("SELECT node_id, target_session_id FROM interactive_requests WHERE run_id = ?"),
    ).toEqual([{ node_id: "publish", target_session_id: sessionId }]);
    // (doctor's fork checks run in test/cli/rerun.test.ts; a CLI process here costs ~4 s.)
    expect(runOutput(stateDir, forkId!)).toEqual({ published: true });

    // The session's run is now the fork, which completed: a retry of it is refused in one line.
    const again = pi.records.length;
    await pi.prompt("/workflow retry", 60_000);
    const refusal = await pi.waitFor((r) => isNotice(r, /^\/workflow: /), {
      from: again,
      what: "the retry refusal",
    });
    expect(refusal.message).toMatch(
      new RegExp(`^/workflow: .*Run ${forkId} is completed: only a failed or timed-out run`),
    );
  });

  it("keeps prompts, outputs, session ids and paths out of host status and the host log", async () => {
    const status = await cli(world, ["host", "status", "--json"]);
    expect(status.code).toBe(0);
    const log = readFileSync(join(world.sandbox.stateDir, "host.log"), "utf8");
    expect(runs.length).toBeGreaterThan(0);
    for (const text of [status.stdout, status.stderr, log]) {
      for (
        const secret of [
          sessionId,
          world.sandbox.root,
          world.sandbox.project,
          "Write a short plan",
          "write the README",
          "Take your time",
          "go ahead",
          "Release 2.0.0",
          "Draft a one-line release note",
        ]
      ) {
        expect(text, secret).not.toContain(secret);
      }
    }
  });
});
