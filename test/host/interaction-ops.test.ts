/**
 * The interactive-step operations against one real host (workers and validation children are
 * real processes); socket clients stand in for the Pi extension of each session.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { MAX_FRAME_BYTES } from "../../src/protocol/framing.ts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliProcess,
  killAll,
  ROOT,
  runCliProcess,
  startHostProcess,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { type PendingStep, SessionClient } from "../support/interactive-session.ts";
import { rows, runRow, violations, writeProject } from "../support/interactive-fixtures.ts";

const home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "600000" });
const project = writeProject(home.root);
const clients: SessionClient[] = [];
let sessionNo = 0;

async function newSession(): Promise<SessionClient> {
  const client = await SessionClient.open(home.socketPath, `sess-${++sessionNo}`);
  clients.push(client);
  return client;
}

async function startRun(session: SessionClient, workflow: string, input: unknown = {}) {
  const answer = await session.start(workflow, project, input);
  if (answer.outcome !== "accepted") throw new Error(JSON.stringify(answer));
  return (answer.receipt as { run: { runId: string } }).run.runId;
}

function finished(runId: string) {
  return waitFor(
    () => {
      const row = runRow(home.stateDir, runId);
      return ["completed", "failed", "timed_out", "cancelled"].includes(row.state) && row;
    },
    `run ${runId} to end`,
    30_000,
  );
}

function strandedTurns(runId: string) {
  return rows(
    home.stateDir,
    "SELECT cause, source_attempt_id, eligible_at IS NOT NULL AS eligible FROM turn_intents " +
      "WHERE run_id = :runId",
    { runId },
  );
}

/** The run's attempt of `nodeId` as `run.status` (and `status --json`) shows it. */
async function attemptOf(session: SessionClient, runId: string, nodeId: string) {
  const answer = await session.request("run.status", { runId, payload: {} });
  const attempts = (answer.receipt as { attempts: { nodeId: string }[] }).attempts;
  return attempts.find((a) => a.nodeId === nodeId);
}

let host: CliProcess;

beforeAll(async () => {
  host = await startHostProcess(home.env);
});
afterAll(async () => {
  for (const client of clients) client.close();
  await killAll();
  await home.cleanup();
});

describe("the two-turn example", () => {
  it("runs every model step in the origin session and completes", async () => {
    const session = await newSession();
    const started = await session.start(join(ROOT, "examples/two-turn-agent.workflow.ts"), ROOT, {
      task: "write tests",
    });
    expect(started.outcome).toBe("accepted");
    const runId = (started.receipt as { run: { runId: string } }).run.runId;
    const draft = await session.nextStep();
    expect(draft).toMatchObject({ runId, kind: "agent", reminders: 0, submission: null });
    expect(draft.contract).toMatchObject({ step: "draft", workflowName: "two-turn-agent" });
    expect(draft.contract.message).toContain("write tests");
    expect((await session.present(draft, "entry-1")).outcome).toBe("accepted");
    const bad = await session.submit(draft, { steps: "not a list" });
    expect(bad.receipt).toMatchObject({ status: "rejected", error: { code: "outputRejected" } });
    const good = await session.submit(draft, '```json\n{"steps": ["a", "b"]}\n```');
    expect(good.receipt).toMatchObject({ status: "accepted" });
    const review = await session.nextStep((s) => s.contract.step === "review");
    expect(review.contract.message).toContain('{"steps":["a","b"]}');
    expect((await session.submit(review, { risk: "none", ok: true })).receipt).toMatchObject({
      status: "accepted",
    });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    const events = rows<{ type: string }>(
      home.stateDir,
      "SELECT type FROM events WHERE run_id = :runId ORDER BY seq",
      { runId },
    ).map((e) => e.type);
    expect(events.filter((t) => t === "run.waiting")).toHaveLength(2);
    expect(events.filter((t) => t === "interaction.accepted")).toHaveLength(2);
    expect(events.filter((t) => t === "interaction.rejected")).toHaveLength(1);
    expect(events.at(-1)).toBe("run.completed");
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("the next step in the submit's answer", () => {
  it("names the session's next step once the run committed it, and stops waiting when the run goes elsewhere", async () => {
    const session = await newSession();
    const started = await session.start(join(ROOT, "examples/two-turn-agent.workflow.ts"), ROOT, {
      task: "next steps",
    });
    const runId = (started.receipt as { run: { runId: string } }).run.runId;
    const draft = await session.nextStep();
    const accepted = await session.submit(draft, { steps: ["a"] }, { nextWaitMs: 5_000 });
    const receipt = accepted.receipt as {
      message: string;
      next: PendingStep | null;
      cursor?: number;
    };
    expect(receipt).toMatchObject({ status: "accepted" });
    // Claimed for the session, as interaction.claim would return it.
    expect(receipt.next).toMatchObject({ runId, kind: "agent", submission: null });
    expect(receipt.next!.contract.step).toBe("review");
    // With the session's cursor of that claim: a push at it is no news (the session's runs have
    // not moved since).
    const now = await session.request("session.wait", {
      payload: { sessionId: session.sessionId, cursor: receipt.cursor, waitMs: 0 },
    });
    expect(now.receipt).toMatchObject({ cursor: receipt.cursor, changed: false });
    expect(receipt.next!.interactionId).toBe((await session.claim()).interaction!.interactionId);
    expect(receipt.message).toBe(
      'Output accepted for step "draft". The next workflow step follows: do it now.',
    );

    // Then a compute node and the run's end: no next step, and no wait for one.
    const since = Date.now();
    const last = await session.submit(receipt.next!, { risk: "none", ok: true }, {
      nextWaitMs: 5_000,
    });
    const answeredAt = Date.now();
    expect(last.receipt).toMatchObject({ status: "accepted", next: null });
    expect((last.receipt as { message: string }).message).toMatch(/End your turn now\.$/);
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    // The answer came once the run went elsewhere (its compute node started), not at the end of
    // the 5 s wait. A host that waits it out answers 5 s after the submit at the earliest (its
    // deadline counts from its receipt; 4.9 s allows for timers' rounding). One that does not
    // answers before that or, where a loaded worker started the node only near the deadline,
    // within 1 s of that start (the host's clock is this machine's; the start wakes the host,
    // which answers from what it holds). So a full wait fails this whenever the node started more
    // than 1 s before the wait's end, however slow the worker was to start it.
    const [moved] = rows<{ at: number }>(
      home.stateDir,
      "SELECT started_at AS at FROM node_attempts WHERE run_id = :runId AND node_id = 'summary'",
      { runId },
    );
    expect(answeredAt).toBeLessThan(Math.max(since + 4_900, moved!.at + 1_000));
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("session reservation", () => {
  it("refuses a second interactive run in a session with the active run id", async () => {
    const session = await newSession();
    expect((await session.claim()).activeRun).toBeNull();
    const first = await startRun(session, "routed");
    const second = await session.start("routed", project, {});
    expect(second).toMatchObject({ outcome: "conflict", error: { code: "sessionBusy" } });
    expect(second.error!.message).toContain(first);
    // A restarted Pi finds its run from the claim and the wake-up, with no session id in them.
    await session.nextStep();
    const claimed = await session.claim();
    expect(claimed.activeRun).toEqual({
      runId: first,
      revision: runRow(home.stateDir, first).revision,
    });
    expect((await session.wait(0)).activeRun).toMatchObject({ runId: first });
    // Another session is free.
    const other = await newSession();
    const otherRun = await startRun(other, "routed");
    expect((await other.wait(0)).activeRun).toMatchObject({ runId: otherRun });
    await session.request("run.cancel", { runId: first, payload: {} });
    await other.request("run.cancel", { runId: otherRun, payload: {} });
    expect((await session.claim()).activeRun).toBeNull();
    expect((await session.wait(0)).activeRun).toBeNull();
    // The reservation ends with the run.
    const again = await startRun(session, "routed");
    await session.request("run.cancel", { runId: again, payload: {} });
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("the transport contract of submissions", () => {
  it("refuses wrong steps, stale attempts and other sessions, and keeps receipts per tool call", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed", { topic: "receipts" });
    const step = await session.nextStep();
    expect(step.contract.message).toContain("Give a number for receipts");

    const wrong = await session.submit(step, { n: 1 }, { nodeId: "done" });
    expect(wrong).toMatchObject({ outcome: "rejected", error: { code: "wrongStep" } });
    expect(wrong.error!.message).toContain('the pending step is "ask"');
    const stale = await session.submit(step, { n: 1 }, { attemptId: "old-attempt" });
    expect(stale).toMatchObject({ outcome: "rejected", error: { code: "staleAttempt" } });
    const intruder = await newSession();
    const foreign = await intruder.submit(step, { n: 1 });
    expect(foreign).toMatchObject({ outcome: "rejected", error: { code: "wrongSession" } });

    const first = await session.submit(step, { n: "x" }, { toolCallId: "tool-1" });
    expect(first).toMatchObject({ outcome: "accepted", receipt: { status: "rejected" } });
    expect((first.receipt as { message: string }).message).toContain('send {"n": <number>}');
    // The pending read shows the stored actionable error.
    expect((await session.claim()).interaction?.submission).toMatchObject({
      status: "rejected",
      error: { code: "outputRejected" },
    });
    const repeat = await session.submit(step, { n: "x" }, { toolCallId: "tool-1" });
    expect(repeat).toMatchObject({ outcome: "adopted", receipt: first.receipt });
    const reused = await session.submit(step, { n: 2 }, { toolCallId: "tool-1" });
    expect(reused).toMatchObject({ outcome: "conflict", error: { code: "idempotencyKeyReused" } });

    const ok = await session.submit(step, { n: 7 }, { toolCallId: "tool-2" });
    expect(ok.receipt).toMatchObject({ status: "accepted" });
    // After acceptance the same tool call still gets its receipt, from any client id.
    const restarted = await SessionClient.open(home.socketPath, session.sessionId);
    clients.push(restarted);
    const again = await restarted.submit(step, { n: 7 }, { toolCallId: "tool-2" });
    expect(again).toMatchObject({ outcome: "adopted", receipt: ok.receipt });
    const late = await session.submit(step, { n: 8 }, { toolCallId: "tool-3" });
    expect(late).toMatchObject({ outcome: "rejected", error: { code: "notPending" } });

    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({ got: { n: 7 } });
    const submissions = rows<{ outcome: string }>(
      home.stateDir,
      "SELECT s.outcome FROM interactive_submissions s JOIN interactive_requests i " +
        "ON i.request_id = s.request_id WHERE i.run_id = :runId ORDER BY s.submitted_at",
      { runId },
    );
    expect(submissions.map((s) => s.outcome)).toEqual(["rejected", "accepted"]);
    // The step succeeded, and status still says what was rejected on the way.
    expect(await attemptOf(session, runId, "ask")).toMatchObject({
      state: "ok",
      submissions: { submitted: 2, rejected: 1, lastRejection: expect.stringContaining('{"n"') },
    });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("lets a new tool call with the same output wait for the verdict of the one validating", async () => {
    const session = await newSession();
    const gate = join(home.root, "gate-attach");
    const runId = await startRun(session, "routed", { gate });
    const step = await session.nextStep();
    const output = { slow: true, n: 4 };
    const first = await session.submit(step, output, { toolCallId: "v-1", waitMs: 0 });
    expect(first.receipt).toMatchObject({ status: "validating" });
    const { submissionId } = first.receipt as { submissionId: string };
    // The model's resubmit (as the tool advised) is a new tool call: it attaches, not refused.
    const again = await session.submit(step, output, { toolCallId: "v-2", waitMs: 0 });
    expect(again).toMatchObject({
      outcome: "accepted",
      receipt: { status: "validating", submissionId },
    });
    expect((again.receipt as { message: string }).message).toContain("with the same output");
    const other = await session.submit(step, { n: 5 }, { toolCallId: "v-3", waitMs: 0 });
    expect(other).toMatchObject({ outcome: "rejected", error: { code: "validationPending" } });
    expect(other.error!.message).toContain("call submit again with that same output");
    const verdict = session.submit(step, output, { toolCallId: "v-2", waitMs: 25_000 });
    writeFileSync(gate, "");
    expect((await verdict).receipt).toMatchObject({ status: "accepted", submissionId });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    // One submission, validated once; the attached tool call keeps its answer.
    expect(submissionOutcomes(runId)).toEqual([{ outcome: "accepted" }]);
    expect((await session.submit(step, output, { toolCallId: "v-2" })).receipt).toMatchObject({
      status: "accepted",
      submissionId,
    });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("records a submission held for its verdict when the same step's tool calls come again", async () => {
    // The run's prepared process validates before the submission is recorded (held-submission.ts);
    // the same tool call sent again and another with the same output, both while it is held,
    // record it and join its one validation: one submission, validated and accepted once.
    const session = await newSession();
    const gate = join(home.root, "gate-held");
    const runId = await startRun(session, "routed", { gate });
    const step = await session.nextStep();
    const output = { slow: true, n: 4 };
    const calls = [
      session.submit(step, output, { toolCallId: "h-1", waitMs: 25_000 }),
      session.submit(step, output, { toolCallId: "h-1", waitMs: 25_000 }),
      session.submit(step, output, { toolCallId: "h-2", waitMs: 25_000 }),
    ];
    // The last call attached (its receipt names the submission): all three were read.
    await waitFor(
      () =>
        rows(
          home.stateDir,
          "SELECT 1 FROM host_commands WHERE operation = 'interaction.submit' AND " +
            "idempotency_key = 'h-2'",
        ).length === 1,
      "the third call to attach",
    );
    writeFileSync(gate, "");
    const answers = await Promise.all(calls);
    const ids = answers.map((a) => (a.receipt as { submissionId: string }).submissionId);
    expect(answers.map((a) => (a.receipt as { status: string }).status)).toEqual(
      ["accepted", "accepted", "accepted"],
    );
    expect(new Set(ids).size).toBe(1);
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(submissionOutcomes(runId)).toEqual([{ outcome: "accepted" }]);
    expect(rows(
      home.stateDir,
      "SELECT 1 FROM events WHERE run_id = :runId AND type = 'interaction.accepted'",
      { runId },
    )).toHaveLength(1);
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("records the presentation entry by compare-and-set, one current step per session", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed");
    const step = await session.nextStep();
    expect(step.presentation.sessionEntryId).toBeNull();
    expect((await session.present(step, "e-1")).receipt).toMatchObject({ sessionEntryId: "e-1" });
    expect((await session.present(step, "e-1")).outcome).toBe("accepted");
    const other = await session.present(step, "e-2");
    expect(other).toMatchObject({ outcome: "conflict", error: { code: "presentationConflict" } });
    expect(other.error!.message).toContain("e-1");
    expect((await session.present(step, "e-2", "e-1")).outcome).toBe("accepted");
    expect((await session.claim()).interaction?.presentation.sessionEntryId).toBe("e-2");
    await session.request("run.cancel", { runId, payload: {} });
    expect((await session.claim()).interaction).toBeNull();
    const closed = await session.present(step, "e-3", "e-2");
    expect(closed).toMatchObject({ outcome: "rejected", error: { code: "notPending" } });
  });
});

describe("a submission carrying its step's presentation", () => {
  it("records the entry first in the submission's commit; a refused entry leaves the submission to its own checks", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed");
    const step = await session.nextStep();
    // Rejected by validate, but the presentation is recorded, before the submission.
    const first = await session.submit(step, { n: "x" }, {
      presentation: { sessionEntryId: "p-1" },
    });
    expect(first.receipt).toMatchObject({ status: "rejected" });
    expect((await session.claim()).interaction?.presentation.sessionEntryId).toBe("p-1");
    const events = rows<{ type: string; seq: number }>(
      home.stateDir,
      "SELECT type, seq FROM events WHERE run_id = :runId AND type IN " +
        "('interaction.presented', 'interaction.submitted') ORDER BY seq",
      { runId },
    ).map((e) => e.type);
    expect(events).toEqual(["interaction.presented", "interaction.submitted"]);
    // Another entry without `replaces` conflicts: the submission is still taken and accepted,
    // and the stored entry stays.
    const second = await session.submit(step, { n: 2 }, {
      presentation: { sessionEntryId: "p-2" },
    });
    expect(second.receipt).toMatchObject({ status: "accepted" });
    expect(rows(
      home.stateDir,
      "SELECT presentation_entry_id AS entry FROM interactive_requests WHERE run_id = :runId",
      { runId },
    )).toEqual([{ entry: "p-1" }]);
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("reminders, updates and deadlines", () => {
  it("reminds twice, then fails the attempt so $result.outcome routes it", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed");
    const step = await session.nextStep();
    const one = await session.remind(step, 1);
    expect(one.receipt).toMatchObject({ action: "remind", reminder: 1 });
    expect((one.receipt as { message: string }).message).toMatch(/^Reminder 1 of 2/);
    expect(await session.remind(step, 1)).toMatchObject({
      outcome: "adopted",
      receipt: one.receipt,
    });
    const stale = await session.request("interaction.remind", {
      runId,
      idempotencyKey: "other-key",
      payload: { interactionId: step.interactionId, sessionId: session.sessionId, reminder: 1 },
    });
    expect(stale).toMatchObject({ outcome: "conflict", error: { code: "staleReminder" } });
    expect((await session.remind(step, 2)).receipt).toMatchObject({ action: "remind" });
    expect((await session.claim()).interaction?.reminders).toBe(2);
    const failed = await session.remind(step, 3);
    expect(failed.receipt).toMatchObject({ action: "failed", error: { code: "noSubmission" } });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({
      outcome: "failed",
      code: "noSubmission",
    });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("fails submissionsRejected, with the count and the last rejection, when every submission was rejected", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed");
    const step = await session.nextStep();
    expect((await session.submit(step, { n: "x" })).receipt).toMatchObject({ status: "rejected" });
    await session.remind(step, 1);
    await session.remind(step, 2);
    const failed = await session.remind(step, 3);
    const error = (failed.receipt as { error: { code: string; message: string } }).error;
    expect(error.code).toBe("submissionsRejected");
    expect(error.message).toMatch(
      /3 times without an accepted output \(1 submission, all rejected\); the last rejection: .*send \{"n"/,
    );
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(await attemptOf(session, runId, "ask")).toMatchObject({
      state: "failed",
      error: { code: "submissionsRejected" },
      submissions: { submitted: 1, rejected: 1 },
    });
  });

  it("accepts updates on the waiting attempt, checked and rate limited", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed");
    const step = await session.nextStep();
    const update = await session.update(step, { type: "status", key: "a", data: { m: 1 } });
    expect(update).toMatchObject({ outcome: "accepted", receipt: { status: "updated" } });
    const bad = await session.update(step, { type: "Bad Type", data: 1 });
    expect(bad).toMatchObject({ outcome: "rejected", error: { code: "invalidUpdate" } });
    const stored = rows<{ count: number }>(
      home.stateDir,
      "SELECT count FROM node_updates WHERE run_id = :runId AND type = 'status'",
      { runId },
    );
    expect(stored).toEqual([{ count: 1 }]);
    // 400 at once pass the burst of 100 unless they take over 15 s (20/s refill): loaded machines too.
    const burst = await Promise.all(
      Array.from({ length: 400 }, (_, i) => session.update(step, { type: "tick", data: i })),
    );
    expect(burst.filter((a) => a.error?.code === "rateLimited").length).toBeGreaterThan(0);
    await session.request("run.cancel", { runId, payload: {} });
  });

  it("times out with no worker alive and follows the $result.outcome edge", async () => {
    const session = await newSession();
    const runId = await startRun(session, "routed", { timeoutMs: 400 });
    const step = await session.nextStep();
    expect(step.contract.deadlineAt).toBeGreaterThan(Date.now() - 1000);
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({
      outcome: "timed_out",
      code: "nodeTimedOut",
    });
    const late = await session.submit(step, { n: 1 });
    expect(late).toMatchObject({ outcome: "rejected", error: { code: "notPending" } });
    expect(
      rows(home.stateDir, "SELECT status FROM interactive_requests WHERE run_id = :runId", {
        runId,
      }),
    ).toEqual([{ status: "timedOut" }]);
    // The session is owed one turn about the step closed under the model (the outbox's intent).
    expect(strandedTurns(runId)).toEqual([
      { cause: "timedOut", source_attempt_id: step.contract.attempt, eligible: 1 },
    ]);
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("ends the run timed_out without a recovery edge and frees the session", async () => {
    const session = await newSession();
    const runId = await startRun(session, "lone", { timeoutMs: 300 });
    const step = await session.nextStep();
    expect(await finished(runId)).toMatchObject({ state: "timed_out" });
    expect(strandedTurns(runId)).toEqual([
      { cause: "timedOut", source_attempt_id: step.contract.attempt, eligible: 1 },
    ]);
    const next = await startRun(session, "lone");
    await session.request("run.cancel", { runId: next, payload: {} });
  });
});

describe("decisions and assistant messages", () => {
  it("checks a decision's choice and takes an assistant message's text", async () => {
    const session = await newSession();
    const runId = await startRun(session, "talk");
    const pick: PendingStep = await session.nextStep();
    expect(pick.contract).toMatchObject({ nodeKind: "decision", kind: "agent" });
    const maybe = await session.submit(pick, { route: "maybe" });
    expect(maybe.receipt).toMatchObject({ status: "rejected" });
    expect((maybe.receipt as { message: string }).message).toContain('"yes", "no"');
    expect((await session.submit(pick, '{"route":"yes"}')).receipt).toMatchObject({
      status: "accepted",
    });
    const say = await session.nextStep((s) => s.contract.step === "say");
    expect(say).toMatchObject({ kind: "assistantMessage" });
    expect(say.contract.message).toContain("Tell the user: yes");
    expect((await session.submit(say, { text: "  " })).receipt).toMatchObject({
      status: "rejected",
    });
    expect((await session.submit(say, "Shipping now.")).receipt).toMatchObject({
      status: "accepted",
    });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({
      text: "Shipping now.",
    });
  });
});

describe("the validation child's facts", () => {
  it("streams run facts larger than one message to the validation child", async () => {
    const session = await newSession();
    const runId = await startRun(session, "heavy");
    const step = await session.nextStep(undefined, 60_000);
    const answer = await session.submit(step, { n: 3 }, { waitMs: 30_000 });
    expect(answer.receipt).toMatchObject({ status: "accepted" });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({
      n: 3,
      seen: 1_200_000,
    });
  });
});

describe("a submission at the message limit", () => {
  it("is rejected at once as too large when the validate request cannot carry it", async () => {
    // A long project path makes the run's source identity (in the validate request) larger than
    // the envelope of the socket request that carried the submission.
    const deep = join(home.root, ...Array.from({ length: 9 }, (_, i) => `${i}`.repeat(200)));
    const longProject = writeProject(deep);
    const session = await newSession();
    const answer = await session.start("routed", longProject, {});
    const runId = (answer.receipt as { run: { runId: string } }).run.runId;
    const step = await session.nextStep();
    const t0 = Date.now();
    const big = await session.submit(step, "x".repeat(MAX_FRAME_BYTES - 2_000), { waitMs: 30_000 });
    expect(big.receipt).toMatchObject({ status: "rejected", error: { code: "outputTooLarge" } });
    // Not after the validation child's deadline: nothing reached it.
    expect(Date.now() - t0).toBeLessThan(15_000);
    // The request stays ready for a smaller output.
    expect((await session.submit(step, { n: 5 })).receipt).toMatchObject({ status: "accepted" });
    expect(await finished(runId)).toMatchObject({ state: "completed" });
  });
});

describe("push to the session", () => {
  it("wakes a held session.wait as soon as the step is requested", async () => {
    const session = await newSession();
    await session.wait(0); // take the current cursor
    const held = session.wait(20_000);
    const t0 = Date.now();
    const runId = await startRun(session, "routed");
    await held;
    // The first wake is the run's own commits; wait until a step is there.
    const step = await session.nextStep();
    expect(step.runId).toBe(runId);
    expect(Date.now() - t0).toBeLessThan(10_000);
    await session.request("run.cancel", { runId, payload: {} });
  });
});

describe("privacy", () => {
  it("shows no prompt, output, session id or path in host status or the host log", async () => {
    const secrets = {
      session: "sess-SECRET-5151",
      prompt: "SECRET-TOPIC-6262",
      output: "SECRET-OUTPUT-7373",
    };
    const session = await SessionClient.open(home.socketPath, secrets.session);
    clients.push(session);
    const runId = await startRun(session, "routed", { topic: secrets.prompt });
    const step = await session.nextStep();
    expect(step.contract.message).toContain(secrets.prompt);
    const status = await runCliProcess(["host", "status", "--json"], home.env);
    expect(JSON.parse(status.stdout).pendingInteractions).toBeGreaterThanOrEqual(1);
    const text = await runCliProcess(["host", "status"], home.env);
    expect(text.stdout).toMatch(/pending interactions: [1-9]/);
    await session.present(step, "entry-SECRET-8484");
    await session.submit(step, { n: "no", note: secrets.output });
    await session.update(step, { type: "log", data: secrets.output });
    // run.status names the step the run waits on in its Pi session: ids and times only.
    const runJson = await runCliProcess(["status", runId, "--json"], home.env);
    const interaction = JSON.parse(runJson.stdout).interaction;
    expect(interaction).toMatchObject({
      interactionId: step.interactionId,
      nodeId: "ask",
      attemptId: step.contract.attempt,
      nodeKind: "agent",
      presented: true,
      reminders: 0,
      submissions: 1,
      validating: false,
    });
    expect(Object.keys(interaction).sort()).toEqual([
      "attemptId",
      "deadlineAt",
      "interactionId",
      "nodeId",
      "nodeKind",
      "presented",
      "reminders",
      "since",
      "submissions",
      "validating",
    ]);
    const runText = await runCliProcess(["status", runId], home.env);
    expect(runText.stdout).toContain("waiting: ask (agent) in its Pi session since");
    expect(runText.stdout).toContain("shown in the session; 1 submission; reminders 0 of 2");
    const answer = await runCliProcess(["answer", runId, "42"], home.env);
    expect(answer.code).not.toBe(0);
    expect(answer.stderr).toContain("waits for its Pi session at step ask (agent)");
    expect((await session.submit(step, { n: 1, note: secrets.output })).receipt).toMatchObject({
      status: "accepted",
    });
    await finished(runId);
    for (const output of [status.stdout, status.stderr, text.stdout, text.stderr, host.stderr()]) {
      for (const secret of [...Object.values(secrets), "entry-SECRET-8484", project, "sess-"]) {
        expect(output).not.toContain(secret);
      }
    }
    // The run's own status shows its updates to its owner, but no prompt, session or path.
    for (const output of [runJson, runText, answer].flatMap((o) => [o.stdout, o.stderr])) {
      for (const secret of [secrets.session, secrets.prompt, "entry-SECRET-8484", project]) {
        expect(output).not.toContain(secret);
      }
    }
    expect(host.stderr()).toContain("interaction.accepted");
    // Each submission said once, also one held for its verdict and decided at once.
    const submitted = host.stderr().split("\n").filter((line) =>
      line.includes(" interaction.submitted ") && line.includes(`runId=${runId}`)
    );
    expect(submitted).toHaveLength(2);
  });
});

/** The outcomes of a run's submissions. */
function submissionOutcomes(runId: string) {
  return rows(
    home.stateDir,
    "SELECT s.outcome FROM interactive_submissions s JOIN interactive_requests i " +
      "ON i.request_id = s.request_id WHERE i.run_id = :runId",
    { runId },
  );
}
