/**
 * The outbox in the real Pi: notify nodes' messages appear once, in order, as displayed custom
 * messages that start no turn; a completion with a `presentationPrompt` then starts exactly one
 * turn whose hidden message the model reads; a failing run gives exactly one short factual
 * fallback turn; a run waiting at a checkpoint whose `presentationPrompt` has 0.12's waiting
 * branch gets one presentation turn for the wait, then one for its completion. Crashes: Pi SIGKILLed between showing a notification and recording it shows
 * nothing twice after a restart; the host SIGKILLed right after the terminal commit still
 * delivers the completion turn once; a second Pi process on the same session never shows what
 * the first one showed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeModel, type FakeModelRequest, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, type PiSandbox, REPO_ROOT } from "../support/pi-sandbox.ts";
import { type PiRpc, type RpcRecord, startPi, stopAllPi } from "../support/pi-rpc.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { connectHost } from "../../src/client/host-connection.ts";
import { stepResponder } from "../support/step-responder.ts";
import { waitFor } from "../support/wait.ts";

const OUTBOX_TYPE = "pi-workflows-outbox";
const CLI = join(REPO_ROOT, "src/cli/main.ts");

const ANNOUNCE = `
import { compute, defineWorkflow, notify } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "announce",
  startAt: "hello",
  presentationPrompt: ({ output }) => "Tell the user the answer is " + output.answer + ".",
  nodes: {
    hello: notify({ message: "Starting the count" }),
    work: compute({ run: () => ({ answer: 42 }) }),
    done: notify({ kind: "final", message: ({ outputs }) => "Counted " + outputs.work.answer }),
    result: compute({ run: ({ outputs }) => outputs.work }),
  },
  edges: [
    { from: "hello", to: "work" },
    { from: "work", to: "done" },
    { from: "done", to: "result" },
  ],
});
`;

const BREAKS = `
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "breaks",
  startAt: "boom",
  nodes: { boom: compute({ run: () => { throw new Error("disk quota exceeded"); } }) },
});
`;

/** An agent step with a short deadline and no recovery edge: the run ends timed_out. */
const SLOW_STEP = `
import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "slowstep",
  startAt: "count",
  nodes: { count: agent({ prompt: "Count the files slowly", timeoutMs: 2500 }) },
});
`;

/** The slow step again, but a timeout routes on to a second step the model does at once. */
const RETRY_STEP = `
import { agent, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "retrystep",
  startAt: "count",
  nodes: {
    count: agent({ prompt: "Count the files slowly", timeoutMs: 2500 }),
    finish: agent({ prompt: "Say done now" }),
  },
  edges: [
    { from: "count", switch: { on: "$result.outcome", cases: { ok: "finish", failed: "finish", timed_out: "finish" } } },
  ],
});
`;

/**
 * A 0.12 file: its presentationPrompt has a waiting branch, so the model presents the waiting
 * checkpoint (and, once answered, the completed run).
 */
const APPROVE = `
import { checkpoint, compute, defineWorkflow } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "approve",
  presentationPrompt: ({ state, finalOutput }) =>
    state.status === "waiting"
      ? "Ask the user: " + finalOutput.summary + " (step " + state.waitingOn + ")"
      : "Tell the user it shipped: " + JSON.stringify(finalOutput),
  startAt: "ask",
  nodes: {
    ask: checkpoint({ summary: "Ship version 2?" }),
    ship: compute({ run: ({ outputs }) => ({ shipped: outputs.ask }) }),
  },
  edges: [{ from: "ask", to: "ship" }],
});
`;

/**
 * A 0.12 file whose presentationPrompt has a waiting branch, waiting at a human decision: 0.12
 * started a model turn to present it; the spec forbids that (a decision starts no model turn), so
 * Pi shows the decision to the person, and the run ends as in 0.12 once answered.
 */
const DECIDE = `
import {
  choice, compute, defineHumanChoices, defineWorkflow, humanDecision, humanDecisionEdge,
} from "@osolmaz/pi-workflows";
const choices = defineHumanChoices({ ship: choice({ label: "Ship it" }), hold: choice({ label: "Hold" }) });
export default defineWorkflow({
  name: "decide",
  presentationPrompt: ({ state, finalOutput }) =>
    state.status === "waiting"
      ? "Ask the person: " + state.waitingOn
      : "Tell the user the decision: " + JSON.stringify(finalOutput),
  startAt: "choose",
  nodes: {
    choose: humanDecision({
      audience: "owner",
      choices,
      request: () => ({
        title: "Ship version 3?",
        subject: "v3",
        presentation: {
          schema: "pi-workflows.decision-presentation.v1",
          summary: "Ship version 3",
          blocks: [{ kind: "bullets", items: ["faster start"] }],
        },
      }),
    }),
    ship: compute({ run: ({ outputs }) => ({ shipped: outputs.choose.choice }) }),
    hold: compute({ run: () => ({ shipped: false }) }),
  },
  edges: [humanDecisionEdge({ from: "choose", choices, cases: { ship: "ship", hold: "hold" } })],
});
`;

function writeWorkflows(sandbox: PiSandbox): void {
  const dir = join(sandbox.project, ".pi", "workflows");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "announce.workflow.ts"), ANNOUNCE);
  writeFileSync(join(dir, "breaks.workflow.ts"), BREAKS);
  writeFileSync(join(dir, "slowstep.workflow.ts"), SLOW_STEP);
  writeFileSync(join(dir, "retrystep.workflow.ts"), RETRY_STEP);
  writeFileSync(join(dir, "approve.workflow.ts"), APPROVE);
  writeFileSync(join(dir, "decide.workflow.ts"), DECIDE);
}

/** Resolves once the newest attempt of a `count` step has timed out (set with the sandbox). */
let slowStepTimedOut: () => Promise<unknown> = () => Promise.reject(new Error("no sandbox yet"));

/** Released by the supersede test: until then the model "thinks" about the user's turn. */
let thinking: Promise<void> = Promise.resolve();

/** The run the user answers with "yes, ship it" (the model answers its checkpoint). */
let approveRun = "";

/** The fake model answers every turn with a line naming what it read. */
async function replyScript(request: FakeModelRequest) {
  const text = request.lastUserText;
  if (text === "yes, ship it") {
    return request.lastRole === "tool" ? { kind: "text" as const, text: "answered" } : {
      kind: "tool" as const,
      name: "workflow",
      args: { action: "answer", runId: approveRun, input: { approved: true } },
    };
  }
  if (text === "think it over") {
    await thinking;
    return { kind: "text" as const, text: "thought it over" };
  }
  // A quick step: the model submits it through the workflow tool.
  if (text.startsWith("Say done now")) return stepResponder()(request);
  // The slow step: the model thinks past the step's deadline (until the host has timed the
  // step out), then ends without submitting.
  if (text.startsWith("Count the files slowly")) {
    await slowStepTimedOut();
    return { kind: "text" as const, text: "still counting" };
  }
  if (text.includes("Presentation instructions")) {
    return { kind: "text" as const, text: "PRESENTED" };
  }
  if (text.startsWith("Workflow ")) return { kind: "text" as const, text: "FALLBACK SEEN" };
  return { kind: "text" as const, text: "ok" };
}

/** Outbox messages Pi appended (RPC `message_end` of our custom type), in order. */
function outboxMessages(pi: PiRpc, from = 0) {
  return pi.records.slice(from).filter((r) =>
    r.type === "message_end" && (r.message as { customType?: string })?.customType === OUTBOX_TYPE
  ).map((r) => {
    const message = r.message as {
      content: string;
      display: boolean;
      details: Record<string, string>;
    };
    return { content: message.content, display: message.display, details: message.details };
  });
}

async function noticeMatching(pi: PiRpc, from: number, pattern: RegExp): Promise<RpcRecord> {
  return await pi.waitFor(
    (r) =>
      r.type === "extension_ui_request" && r.method === "notify" && pattern.test(String(r.message)),
    { from, timeoutMs: 60_000, what: `a notice matching ${pattern}` },
  );
}

function runIdOf(notice: RpcRecord): string {
  return /\((run-[^)]+)\)/.exec(String(notice.message))![1];
}

function readState<T>(sandbox: PiSandbox, sql: string, params: Record<string, string> = {}): T[] {
  const store = openStateStore({
    stateDir: sandbox.stateDir,
    clock: systemClock,
    ids: randomIds,
    readOnly: true,
  });
  try {
    return queryAll<T>(store, sql, params);
  } finally {
    closeStateStore(store);
  }
}

/** Polls the state (read-only) until `done(rows)`, with a deadline. */
async function waitForState<T>(
  sandbox: PiSandbox,
  sql: string,
  params: Record<string, string>,
  done: (rows: T[]) => boolean,
  timeoutMs = 30_000,
): Promise<T[]> {
  let rows: T[] = [];
  return await waitFor(
    () => done(rows = readState<T>(sandbox, sql, params)) && rows,
    () => `the expected rows (last: ${JSON.stringify(rows)})`,
    timeoutMs,
    100,
  );
}

interface OutboxEntry {
  id: string;
  content: string;
  display: boolean;
  details: { kind: string; notificationId?: string; turnIntentId?: string };
}

/** The outbox entries of the session as the Pi process holds it (`get_entries`). */
async function outboxEntries(pi: PiRpc): Promise<OutboxEntry[]> {
  const response = await pi.command({ type: "get_entries" });
  const entries =
    (response.data as { entries: (OutboxEntry & { type: string; customType?: string })[] })
      .entries;
  return entries.filter((e) => e.type === "custom_message" && e.customType === OUTBOX_TYPE);
}

/** Each notification and turn intent of the run shows in exactly one entry. */
function idsOf(entries: OutboxEntry[]): string[] {
  return entries.map((e) => e.details.notificationId ?? e.details.turnIntentId ?? "?");
}

const RUN_OUTBOX_SQL =
  "SELECT 'n' AS what, notification_id AS id, state, session_entry_id AS entry " +
  "FROM notifications WHERE run_id = :runId UNION ALL SELECT 't', intent_id, state, " +
  "session_entry_id FROM turn_intents WHERE run_id = :runId";
interface OutboxRow {
  what: "n" | "t";
  id: string;
  state: string;
  entry: string | null;
}
const allRecorded = (rows: OutboxRow[]) =>
  rows.length === 3 && rows.every((r) => r.state === "delivered" || r.state === "resolved");

describe("the outbox in the real Pi", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;
  let pi: PiRpc;
  const SESSION = "outbox-session-a";

  beforeAll(async () => {
    model = await startFakeModel({ script: replyScript, lifetimeMs: 300_000 });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    slowStepTimedOut = () =>
      waitForState<{ state: string }>(
        sandbox,
        "SELECT state FROM node_attempts WHERE node_id = 'count' ORDER BY started_at DESC, " +
          "rowid DESC LIMIT 1",
        {},
        (rows) => rows[0]?.state === "timed_out",
        60_000,
      );
    writeWorkflows(sandbox);
    await sandbox.install(REPO_ROOT);
    pi = await startPi(sandbox, { sessionId: SESSION });
    // A conversation first: Pi writes the session file once it has one.
    const from = pi.records.length;
    await pi.prompt("hello");
    await pi.waitForSettled(from);
  });

  afterAll(async () => {
    await stopAllPi();
    await sandbox?.cleanup();
    await model?.close();
  });

  const presentations = (from: number) =>
    model.requests.slice(from).filter((r) => r.lastUserText.includes("Presentation instructions"));

  /** Starts `announce` and waits until its notifications and turn are recorded. */
  async function announce(on: PiRpc, options: { expectExit?: boolean } = {}) {
    const from = on.records.length;
    const prompt = on.prompt("/workflow announce", 60_000);
    if (options.expectExit) prompt.catch(() => {});
    else await prompt;
    const started = await noticeMatching(on, from, /^Started workflow announce/);
    return { from, runId: runIdOf(started) };
  }

  /**
   * Waits until the run's notifications and turn are recorded and the model read the
   * presentation; returns the recorded rows and the outbox entries `on` holds for them.
   */
  async function recordedOutbox(on: PiRpc, runId: string, requestsBefore: number) {
    const recorded = await waitForState<OutboxRow>(
      sandbox,
      RUN_OUTBOX_SQL,
      { runId },
      allRecorded,
      60_000,
    );
    await model.waitForRequest(
      (r) => r.lastUserText.includes("Presentation instructions"),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    const entries = (await outboxEntries(on)).filter((e) =>
      recorded.some((r) => r.id === (e.details.notificationId ?? e.details.turnIntentId))
    );
    return { recorded, entries };
  }

  it("shows both notifications once, in order, then starts one completion turn", async () => {
    const requestsBefore = model.requests.length;
    const { from, runId } = await announce(pi);
    const presented = await model.waitForRequest(
      (r) => r.lastUserText.includes("Presentation instructions"),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(presented.lastUserText).toContain("Tell the user the answer is 42.");
    expect(presented.lastUserText).toContain('"answer": 42');
    const recorded = await waitForState<OutboxRow>(sandbox, RUN_OUTBOX_SQL, { runId }, allRecorded);
    await pi.waitForSettled(pi.records.findIndex((r, i) => i >= from && r.type === "agent_start"));

    const shown = outboxMessages(pi, from);
    expect(shown.map((m) => [m.details.kind, m.content, m.display])).toEqual([
      ["notification", "Workflow announce: Starting the count", true],
      ["notification", "Workflow announce — final:\nCounted 42", true],
      ["turn", presented.lastUserText, false],
    ]);
    // The host recorded exactly the entries Pi holds for them.
    const entries = await outboxEntries(pi);
    expect(recorded.map((r) => r.entry).sort()).toEqual(entries.map((e) => e.id).sort());
    expect(idsOf(entries).sort()).toEqual(recorded.map((r) => r.id).sort());
    // One model turn came from the workflow: the presentation; notifications start none.
    expect(presentations(requestsBefore)).toHaveLength(1);
    expect(
      model.requests.slice(requestsBefore).some((r) =>
        r.lastUserText.startsWith("Workflow announce:")
      ),
    )
      .toBe(false);
  });

  it("a failing run gives exactly one short factual fallback turn", async () => {
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("/workflow breaks", 60_000);
    const runId = runIdOf(await noticeMatching(pi, from, /^Started workflow breaks/));
    const seen = await model.waitForRequest(
      (r) => r.lastUserText.startsWith("Workflow "),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(seen.lastUserText).toBe(
      `Workflow "breaks" (run ${runId}) ended with state failed: disk quota exceeded. What to do ` +
        "next: tell the user what happened and how it could be fixed; after a fix, " +
        `/workflow retry ${runId} goes on from the failed step without running ` +
        "earlier steps again. Start the workflow again with the workflow tool only if that is " +
        "what they want.",
    );
    await waitForState<{ state: string }>(
      sandbox,
      "SELECT state FROM turn_intents WHERE run_id = :runId",
      { runId },
      (rows) => rows.length === 1 && rows[0].state === "resolved",
    );
    await pi.waitForSettled(pi.records.findIndex((r, i) => i >= from && r.type === "agent_start"));
    const shown = outboxMessages(pi, from);
    expect(shown).toHaveLength(1);
    expect(shown[0]).toMatchObject({
      display: true,
      details: { kind: "turn", turnKind: "fallback" },
    });
    expect(
      model.requests.slice(requestsBefore).filter((r) => r.lastUserText.startsWith("Workflow ")),
    )
      .toHaveLength(1);
  });

  it("an agent step that times out under the model gives exactly one fallback turn", async () => {
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("/workflow slowstep", 60_000);
    const runId = runIdOf(await noticeMatching(pi, from, /^Started workflow slowstep/));
    const seen = await model.waitForRequest(
      (r) => r.lastUserText.startsWith("Workflow "),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(seen.lastUserText).toMatch(
      new RegExp(
        `^Workflow "slowstep" \\(run ${runId}\\) ended with state timed_out: .+ What to do next: `,
      ),
    );
    const intents = await waitForState<
      { cause: string; source: string | null; resolution: string }
    >(
      sandbox,
      "SELECT cause, source_attempt_id AS source, resolution FROM turn_intents WHERE run_id = :runId",
      { runId },
      (rows) => rows.length === 1 && rows[0].resolution !== null,
    );
    // The stranded step's own intent became the run's one successor turn.
    expect(intents).toEqual([{
      cause: "timedOut",
      source: expect.any(String),
      resolution: "fallback",
    }]);
    await pi.waitForSettled(pi.records.findIndex((r, i) =>
      i >= from && r.type === "message_end" &&
      (r.message as { customType?: string }).customType === OUTBOX_TYPE
    ));
    expect(outboxMessages(pi, from).map((m) => m.details.kind)).toEqual(["turn"]);
    expect(
      model.requests.slice(requestsBefore).filter((r) => r.lastUserText.startsWith("Workflow ")),
    )
      .toHaveLength(1);
  });

  it("a timed-out step whose run goes on: the next step prompt is its one successor", async () => {
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("/workflow retrystep", 60_000);
    const runId = runIdOf(await noticeMatching(pi, from, /^Started workflow retrystep/));
    await waitForState<{ state: string }>(
      sandbox,
      "SELECT state FROM runs WHERE run_id = :runId",
      { runId },
      (rows) => rows[0]?.state === "completed",
      60_000,
    );
    const intents = readState<{ cause: string; resolution: string | null }>(
      sandbox,
      "SELECT cause, resolution FROM turn_intents WHERE run_id = :runId",
      { runId },
    );
    expect(intents).toEqual([{ cause: "timedOut", resolution: "workflowPrompt" }]);
    // The second step's turn is over (the last agent run started since the start settled).
    await pi.waitForSettled(pi.records.findLastIndex((r) => r.type === "agent_start"));
    expect(outboxMessages(pi, from)).toEqual([]);
    const later = model.requests.slice(requestsBefore);
    expect(later.some((r) => r.lastUserText.startsWith("Say done now"))).toBe(true);
    expect(later.some((r) => r.lastUserText.startsWith("Workflow "))).toBe(false);
  });

  it("a user turn after the completion became due supersedes the stale presentation", async () => {
    let release!: () => void;
    thinking = new Promise<void>((resolve) => (release = resolve));
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("think it over");
    await pi.waitFor((r) => r.type === "agent_start", { from, what: "the user's turn" });
    // The run starts and completes while Pi is busy with the user's turn.
    const host = await connectHost(join(sandbox.stateDir, "host.sock"));
    const sessionId = ((await pi.command({ type: "get_state" })).data as { sessionId: string })
      .sessionId;
    let runId: string;
    try {
      const started = await host.request("run.start", {
        payload: {
          workflow: "announce",
          cwd: sandbox.project,
          executionMode: "interactive",
          originSessionId: sessionId,
        },
      });
      expect(started.outcome, JSON.stringify(started)).toBe("accepted");
      runId = (started.receipt as { run: { runId: string } }).run.runId;
    } finally {
      host.close();
    }
    await waitForState<{ eligible: number }>(
      sandbox,
      "SELECT eligible_at IS NOT NULL AS eligible FROM turn_intents WHERE run_id = :runId",
      { runId },
      (rows) => rows.length === 1 && rows[0].eligible === 1,
    );
    // The user writes again after that: the presentation is stale.
    const followUp = await pi.command({
      type: "prompt",
      message: "one more thing",
      streamingBehavior: "followUp",
    });
    expect(followUp.success, JSON.stringify(followUp)).toBe(true);
    release();
    const resolved = await waitForState<{ resolution: string | null }>(
      sandbox,
      "SELECT resolution FROM turn_intents WHERE run_id = :runId",
      { runId },
      (rows) => rows[0]?.resolution !== null,
    );
    expect(resolved).toEqual([{ resolution: "superseded" }]);
    await pi.waitForSettled(from);
    expect(presentations(requestsBefore)).toHaveLength(0);
    // Its notifications were still shown, once each.
    await waitForState<OutboxRow>(
      sandbox,
      RUN_OUTBOX_SQL,
      { runId },
      (rows) => rows.filter((r) => r.what === "n" && r.state === "delivered").length === 2,
    );
  });

  it("a run waiting at a checkpoint gets one presentation turn (0.12's waiting branch); answered, one completion turn", async () => {
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("/workflow approve", 60_000);
    approveRun = runIdOf(await noticeMatching(pi, from, /^Started workflow approve/));
    const presented = await model.waitForRequest(
      (r) => r.lastUserText.includes("Presentation instructions"),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(presented.lastUserText).toContain(
      `The workflow "approve" (run ${approveRun}) is waiting at checkpoint "ask" for an answer.`,
    );
    expect(presented.lastUserText).toContain("Ask the user: Ship version 2? (step ask)");
    expect(presented.lastUserText).toContain('"summary": "Ship version 2?"');
    const waitingTurn = await waitForState<{ source: string | null; resolution: string | null }>(
      sandbox,
      "SELECT source_attempt_id AS source, resolution FROM turn_intents WHERE run_id = :runId",
      { runId: approveRun },
      (rows) => rows.length === 1 && rows[0].resolution !== null,
    );
    expect(waitingTurn).toEqual([{ source: expect.any(String), resolution: "presentation" }]);
    await pi.waitForSettled(pi.records.findIndex((r, i) => i >= from && r.type === "agent_start"));

    // The user answers through the model; the run completes and is presented once more.
    const answered = pi.records.length;
    await pi.prompt("yes, ship it");
    const completion = await model.waitForRequest(
      (r) => r.lastUserText.includes("Tell the user it shipped"),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(completion.lastUserText).toContain('{"shipped":{"approved":true}}');
    const intents = await waitForState<{ source: string | null; resolution: string | null }>(
      sandbox,
      "SELECT source_attempt_id AS source, resolution FROM turn_intents WHERE run_id = :runId " +
        "ORDER BY rowid",
      { runId: approveRun },
      (rows) => rows.length === 2 && rows.every((r) => r.resolution !== null),
    );
    expect(intents).toEqual([
      { source: waitingTurn[0].source, resolution: "presentation" },
      { source: null, resolution: "presentation" },
    ]);
    await pi.waitForSettled(pi.records.findLastIndex((r) => r.type === "agent_start"));
    // One turn per wait and one per completion, nothing else from the workflow.
    expect(presentations(requestsBefore)).toHaveLength(2);
    expect(outboxMessages(pi, from).map((m) => [m.details.turnKind, m.display])).toEqual([
      ["presentation", false],
      ["presentation", false],
    ]);
    expect(answered).toBeGreaterThan(from);
  });

  it("a 0.12 presentationPrompt at a human decision: shown without a model turn; answered, the run ends as in 0.12 with one completion turn", async () => {
    const from = pi.records.length;
    const requestsBefore = model.requests.length;
    await pi.prompt("/workflow decide", 60_000);
    const runId = runIdOf(await noticeMatching(pi, from, /^Started workflow decide/));
    await waitForState<{ state: string }>(
      sandbox,
      "SELECT state FROM runs WHERE run_id = :runId",
      { runId },
      (rows) => rows[0]?.state === "waiting",
    );
    await waitFor(
      async () => {
        const response = await pi.command({ type: "get_entries" });
        const entries = (response.data as { entries: { details?: { kind?: string } }[] }).entries;
        return entries.some((e) => e.details?.kind === "decision");
      },
      () => "the decision shown in Pi",
      30_000,
      100,
    );
    // No turn for the wait: none is due in the commit that parked the run, and none was asked.
    expect(readState(sandbox, "SELECT 1 FROM turn_intents WHERE run_id = :runId", { runId }))
      .toEqual([]);
    expect(presentations(requestsBefore)).toHaveLength(0);

    const answerFrom = pi.records.length;
    await pi.prompt("/workflow answer ship");
    await noticeMatching(pi, answerFrom, /^Answered decision choose/);
    const completion = await model.waitForRequest(
      (r) => r.lastUserText.includes("Tell the user the decision"),
      { from: requestsBefore, timeoutMs: 60_000 },
    );
    expect(completion.lastUserText).toContain('{"shipped":"ship"}');
    await waitForState<{ resolution: string | null }>(
      sandbox,
      "SELECT resolution FROM turn_intents WHERE run_id = :runId",
      { runId },
      (rows) => rows.length === 1 && rows[0].resolution === "presentation",
    );
    await pi.waitForSettled(pi.records.findLastIndex((r) => r.type === "agent_start"));
    expect(presentations(requestsBefore)).toHaveLength(1);
  });

  it("Pi SIGKILLed between showing a notification and recording it shows nothing twice", async () => {
    expect(await pi.stop()).toEqual({ code: 0, signal: null });
    const crashEnv = {
      PI_WORKFLOWS_CRASH_AT: "extension.notification.afterShow#2",
      PI_WORKFLOWS_CRASH_ONCE: join(sandbox.root, "pi-crashed"),
    };
    const crashing = await startPi(sandbox, { sessionId: SESSION, env: crashEnv });
    const requestsBefore = model.requests.length;
    const { runId } = await announce(crashing, { expectExit: true });
    expect(await crashing.exited).toEqual({ code: null, signal: "SIGKILL" });
    // The second notification is on the session but not recorded with the host.
    const before = readState<OutboxRow>(sandbox, RUN_OUTBOX_SQL, { runId });
    expect(before.filter((r) => r.what === "n").map((r) => r.state)).toEqual([
      "delivered",
      "claimed",
    ]);

    pi = await startPi(sandbox, { sessionId: SESSION, env: crashEnv });
    const { recorded, entries } = await recordedOutbox(pi, runId, requestsBefore);
    expect(idsOf(entries).sort()).toEqual(recorded.map((r) => r.id).sort());
    expect(entries.map((e) => e.id).sort()).toEqual(recorded.map((r) => r.entry).sort());
    expect(presentations(requestsBefore)).toHaveLength(1);
  });

  it("the host SIGKILLed right after the terminal commit still delivers the completion turn once", async () => {
    await pi.stop();
    expect(spawnSync(process.execPath, [CLI, "host", "stop"], { env: sandbox.env }).status).toBe(0);
    const crashed = join(sandbox.root, "host-crashed");
    pi = await startPi(sandbox, {
      sessionId: SESSION,
      env: {
        PI_WORKFLOWS_CRASH_AT: "host.run.finished.afterCommit",
        PI_WORKFLOWS_CRASH_ONCE: crashed,
        // The default host lease: the host the extension starts next takes over at once from
        // the killed one, its process being gone; a 1.5 s lease could lapse in a loaded pause
        // and stop that host too (host.claimLost reason=expired).
      },
    });
    const requestsBefore = model.requests.length;
    const { runId } = await announce(pi);
    const { recorded, entries } = await recordedOutbox(pi, runId, requestsBefore);
    expect(existsSync(crashed)).toBe(true);
    expect(idsOf(entries).sort()).toEqual(recorded.map((r) => r.id).sort());
    expect(presentations(requestsBefore)).toHaveLength(1);
  });

  it("a second Pi process on the same session never shows what the first one shows", async () => {
    const second = await startPi(sandbox, { sessionId: SESSION });
    const requestsBefore = model.requests.length;
    const secondFrom = second.records.length;
    const { from, runId } = await announce(pi);
    const { recorded } = await recordedOutbox(pi, runId, requestsBefore);
    const shownIds = [...outboxMessages(pi, from), ...outboxMessages(second, secondFrom)]
      .map((m) => m.details.notificationId ?? m.details.turnIntentId);
    expect(shownIds.sort()).toEqual(recorded.map((r) => r.id).sort());
    expect(presentations(requestsBefore)).toHaveLength(1);
    await second.stop();
  });

  it("left the state consistent", () => {
    const store = openStateStore({
      stateDir: sandbox.stateDir,
      clock: systemClock,
      ids: randomIds,
      readOnly: true,
    });
    try {
      expect(checkInvariants(store)).toEqual([]);
    } finally {
      closeStateStore(store);
    }
  });
});
