/**
 * Answers against a real host process: checkpoints and protected human decisions answered from
 * the CLI and over the socket, with receipts, duplicates, conflicts, stale attempts, the wrong
 * kind, bad answers, and the deadlines the host enforces while no worker runs (a decision's
 * default, an author `timeoutMs`). One host serves the whole file.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCliInProcess } from "../support/cli-in-process.ts";
import {
  type CliProcess,
  hostRequest,
  killAll,
  requestOnce,
  ROOT,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome;
let project: string;
let host: CliProcess;

const REVIEW = `import { checkpoint, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "review",
  startAt: "ask",
  nodes: {
    ask: checkpoint({
      summary: "Approve the plan?",
      answerSchema: {
        type: "object",
        properties: { approved: { type: "boolean" }, note: { type: "string", maxLength: 20 } },
        required: ["approved"],
        additionalProperties: false,
      },
    }),
    done: compute({ run: ({ outputs }) => ({ approved: outputs.ask }) }),
  },
  edges: [{ from: "ask", switch: { on: "$.approved", cases: { true: "done", false: "ask" } } }],
});
`;

const NOTE = `import { checkpoint, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "note",
  startAt: "ask",
  nodes: { ask: checkpoint({ summary: "Anything to add?" }) },
  edges: [],
});
`;

const TIMED = `import { checkpoint, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "timed",
  startAt: "ask",
  nodes: {
    ask: checkpoint({ summary: "Quick!", timeoutMs: 1500 }),
    late: compute({ run: ({ results }) => ({ outcome: results.ask.outcome }) }),
  },
  edges: [{ from: "ask", switch: { on: "$result.outcome", cases: { timed_out: "late" } } }],
});
`;

const TIMED_BARE = `import { checkpoint, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "timed-bare",
  startAt: "ask",
  nodes: { ask: checkpoint({ summary: "Quick!", timeoutMs: 1500 }) },
  edges: [],
});
`;

// The same with a deadline far off: its waiting status is seen for sure (a 1.5 s one can pass
// its deadline before a loaded machine's first poll).
const TIMED_LONG = TIMED_BARE.replace('"timed-bare"', '"timed-long"').replace("1500", "600_000");

const DEFAULTED = `import {
  choice, compute, defineHumanChoices, defineWorkflow, humanDecision, humanDecisionEdge,
} from "pi-workflows";
const choices = defineHumanChoices({ ship: choice({ label: "Ship" }), hold: choice({ label: "Hold" }) });
export default defineWorkflow({
  name: "defaulted",
  startAt: "gate",
  nodes: {
    gate: humanDecision({
      choices,
      onTimeout: { afterMs: 1500, response: { choice: "hold" } },
      request: () => ({
        title: "Ship now?",
        subject: "ship",
        presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "Ship?", blocks: [] },
      }),
    }),
    shipped: compute({ run: () => ({ shipped: true }) }),
    held: compute({ run: ({ outputs }) => ({ shipped: false, gate: outputs.gate }) }),
  },
  edges: [humanDecisionEdge({ from: "gate", choices, cases: { ship: "shipped", hold: "held" } })],
});
`;

beforeAll(async () => {
  home = tempHome();
  project = join(home.root, "project");
  mkdirSync(project, { recursive: true });
  for (
    const [name, text] of Object.entries({ REVIEW, NOTE, TIMED, TIMED_BARE, TIMED_LONG, DEFAULTED })
  ) {
    writeFileSync(join(project, `${name.toLowerCase().replace("_", "-")}.workflow.ts`), text);
  }
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await killAll();
  await home?.cleanup();
});

// The CLI's entry (runCli) in this process, against the file's one host: the same parsing,
// commands and output as a CLI process, without a Node start per answer (its exit as a process is
// test/cli/cli-process's).
const cli = (args: string[]) => runCliInProcess(args, home.env);
const request = (operation: string, fields: Record<string, unknown> = {}) =>
  requestOnce(home.socketPath, hostRequest(operation, fields));

async function start(workflow: string, input?: unknown): Promise<string> {
  const started = await request("run.start", {
    payload: { workflow, cwd: project, ...(input === undefined ? {} : { input }) },
  });
  expect(started.error).toBeUndefined();
  return started.receipt.run.runId;
}

const status = async (runId: string) => (await request("run.status", { runId })).receipt;

async function waitUntil(runId: string, what: string, ok: (s: any) => boolean): Promise<any> {
  return await waitFor(
    async () => {
      const s = await status(runId);
      return ok(s) ? s : null;
    },
    `run ${runId} to be ${what}`,
    30_000,
  );
}

const waitingAt = (runId: string) => waitUntil(runId, "waiting", (s) => s.waiting !== undefined);
const ended = (runId: string) =>
  waitUntil(runId, "finished", (s) => ["completed", "failed", "timed_out"].includes(s.run.state));

describe("answers from the CLI against a real host", () => {
  it("answers a checkpoint: status shows what it asks, a bad answer names the field", async () => {
    const runId = await start("review.workflow.ts");
    const waiting = (await waitingAt(runId)).waiting;
    expect(waiting).toMatchObject({
      kind: "checkpoint",
      operation: "checkpoint.answer",
      nodeId: "ask",
      deadlineAt: null,
      default: null,
      request: { summary: "Approve the plan?" },
      answerSchema: { required: ["approved"] },
    });
    const shown = await cli(["status", runId]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("waiting: ask (checkpoint)");
    expect(shown.stdout).toContain("answer shape: {approved: boolean, note?: string}");
    expect(shown.stdout).toContain("deadline: none");
    expect(shown.stdout).toContain(`answer: pi-workflows answer ${runId.slice(0, 12)} ask`);

    const bad = await cli(["answer", runId, '{"approved": "yes"}']);
    expect([bad.code, bad.stderr.trim()]).toEqual([
      3,
      'Host answered rejected: Invalid answer for checkpoint "ask": answer.approved: expected a boolean, got a string',
    ]);
    const text = await cli(["answer", runId, "ask", "looks fine"]);
    expect(text.code).toBe(3);
    expect(text.stderr).toContain("answer.approved: missing required field");
    const extra = await cli(["answer", runId, '{"approved": true, "colour": "red"}']);
    expect(extra.stderr).toContain("answer.colour: unknown field (expected approved, note)");
    expect((await status(runId)).run.state).toBe("waiting");

    const good = await cli(["answer", runId, "ask", '{"approved": true}']);
    expect(good.stderr).toBe("");
    expect(good.code).toBe(0);
    expect(good.stdout).toContain('Answered ask with {"approved":true}; the run continues');
    const done = await ended(runId);
    expect(done.run).toMatchObject({
      state: "completed",
      output: { approved: { approved: true } },
    });
    expect(done.attempts.map((a: any) => [a.nodeId, a.state])).toEqual([
      ["ask", "ok"],
      ["done", "ok"],
    ]);
  });

  it("answers a run paused while it waits: the run stays paused, and the answer says so", async () => {
    const pausedId = await start("note.workflow.ts");
    await waitingAt(pausedId);
    expect((await cli(["pause", pausedId])).code).toBe(0);
    const whilePaused = await cli(["answer", pausedId, "later"]);
    expect(whilePaused.code).toBe(0);
    expect(whilePaused.stdout).toContain(
      `Answered ask with {"answer":"later"}; the run stays paused: 'pi-workflows resume ${
        pausedId.slice(0, 12)
      }' lets it go on`,
    );
    expect((await status(pausedId)).run).toMatchObject({ paused: true, state: "running" });
    expect((await cli(["resume", pausedId])).code).toBe(0);
    expect((await ended(pausedId)).run.output).toEqual({ answer: "later" });
  });

  it("turns plain text into {answer} for a checkpoint without a schema", async () => {
    const runId = await start("note.workflow.ts");
    await waitingAt(runId);
    const json = await cli(["answer", runId, "ship it", "--json"]);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      answered: {
        nodeId: "ask",
        kind: "checkpoint",
        resolution: "answered",
        answer: { answer: "ship it" },
      },
      run: { runId, state: "running" },
    });
    expect((await ended(runId)).run.output).toEqual({ answer: "ship it" });
    // A second answer is refused by the host with the reason.
    const again = await cli(["answer", runId, "again"]);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(
      /^Host answered conflict: Answer refused: checkpoint "ask" was already answered at /,
    );
  });

  it("answers a human decision by label, by name, and with --choice/--input", async () => {
    const example = join(ROOT, "examples", "human-decision.workflow.ts");
    const first = await start(example, { version: "3.0.0" });
    const second = await start(example, { version: "3.0.1" });
    await waitingAt(first);
    const shown = await cli(["status", first]);
    expect(shown.stdout).toContain("waiting: approval (human decision)");
    expect(shown.stdout).toContain("  Release 3.0.0?");
    expect(shown.stdout).toContain("    • release 3.0.0");
    expect(shown.stdout).toContain("    approve  Approve the release");
    expect(shown.stdout).toContain("needs --input reason=<text>: Why reject?");
    expect(shown.stdout).toMatch(/default: approve at .* \(in (9|10)m\) unless answered first/);
    const json = JSON.parse((await cli(["status", first, "--json"])).stdout);
    expect(json.waiting).toMatchObject({
      kind: "humanDecision",
      operation: "decision.answer",
      decision: { title: "Release 3.0.0?", choices: { approve: { label: "Approve the release" } } },
      default: { answer: { choice: "approve" } },
    });

    const unknown = await cli(["answer", first, "maybe"]);
    expect(unknown.stderr.trim()).toBe(
      'Host answered rejected: Invalid answer for human decision "approval": choice must be one of approve, reject',
    );
    const noText = await cli(["answer", first, "--choice", "reject"]);
    expect(noText.stderr).toContain('choice "reject" needs text (Why reject?)');
    const wrongInput = await cli(["answer", first, "--choice", "reject", "--input", "why=x"]);
    expect([wrongInput.code, wrongInput.stderr.trim()]).toEqual([
      2,
      "Choice 'reject' takes --input reason=<text>, not 'why'",
    ]);
    const byLabel = await cli(["answer", first, "approval", "approve the RELEASE"]);
    expect(byLabel.code).toBe(0);
    expect((await ended(first)).run.output).toEqual({ released: "3.0.0" });

    await waitingAt(second);
    const withText = await cli([
      "answer",
      second,
      "--choice",
      "reject",
      "--input",
      "reason=  flaky tests  ",
    ]);
    expect(withText.code).toBe(0);
    expect((await ended(second)).run.output).toEqual({ released: null, reason: "flaky tests" });
  });
});

describe("answers over the socket", () => {
  it("returns stored receipts, refuses conflicts, stale attempts and the wrong kind", async () => {
    const runId = await start("review.workflow.ts");
    const first = (await waitingAt(runId)).waiting;
    const answer = (fields: Record<string, unknown>, payload: Record<string, unknown> = {}) =>
      hostRequest("checkpoint.answer", {
        runId,
        payload: {
          nodeId: "ask",
          attemptId: first.attemptId,
          answer: { approved: false },
          ...payload,
        },
        ...fields,
      });
    const wrongKind = await request("decision.answer", {
      runId,
      payload: { nodeId: "ask", attemptId: first.attemptId, answer: { choice: "x" } },
    });
    expect([wrongKind.outcome, wrongKind.error.code]).toEqual(["rejected", "wrongKind"]);

    const sent = answer({ idempotencyKey: "answer-once" });
    const accepted = await requestOnce(home.socketPath, sent);
    expect(accepted.outcome).toBe("accepted");
    expect(accepted.receipt.answered).toMatchObject({
      attemptId: first.attemptId,
      answer: { approved: false },
    });
    // The same request again: the stored receipt, nothing applied twice.
    const repeated = await requestOnce(home.socketPath, sent);
    expect(repeated).toMatchObject({ outcome: "accepted", revision: accepted.revision });
    expect(repeated.receipt).toEqual(accepted.receipt);
    // The same id with another payload, and the same key under a new id.
    const reused = await requestOnce(home.socketPath, {
      ...sent,
      payload: { ...sent.payload as object, answer: { approved: true } },
    });
    expect([reused.outcome, reused.error.code]).toEqual(["conflict", "requestIdReused"]);
    const adopted = await requestOnce(home.socketPath, {
      ...sent,
      requestId: `${sent.requestId}-b`,
    });
    expect(adopted).toMatchObject({ outcome: "adopted", revision: accepted.revision });

    // {approved: false} loops back to the checkpoint: a new attempt waits.
    const second = (await waitUntil(
      runId,
      "waiting again",
      (s) => s.waiting !== undefined && s.waiting.attemptId !== first.attemptId,
    )).waiting;
    const stale = await requestOnce(home.socketPath, answer({}, { answer: { approved: true } }));
    expect([stale.outcome, stale.error.code]).toEqual(["conflict", "alreadyAnswered"]);
    const otherNode = await requestOnce(
      home.socketPath,
      answer({}, { nodeId: "done", attemptId: second.attemptId }),
    );
    expect([otherNode.outcome, otherNode.error.message]).toEqual([
      "rejected",
      `Answer refused: run ${runId} waits at node "ask", not "done"`,
    ]);
    const unknownAttempt = await requestOnce(
      home.socketPath,
      answer({}, { attemptId: "attempt-nope" }),
    );
    expect([unknownAttempt.outcome, unknownAttempt.error.code]).toEqual([
      "conflict",
      "staleAttempt",
    ]);
    const badRevision = await requestOnce(
      home.socketPath,
      answer({ expectedRevision: 1 }, { attemptId: second.attemptId }),
    );
    expect([badRevision.outcome, badRevision.error.code]).toEqual(["conflict", "revisionMismatch"]);
    const malformed = await request("checkpoint.answer", {
      runId,
      payload: { nodeId: "ask", answer: 1 },
    });
    expect([malformed.outcome, malformed.error.code]).toEqual(["rejected", "invalidRequest"]);
    const final = await requestOnce(
      home.socketPath,
      answer({}, { attemptId: second.attemptId, answer: { approved: true } }),
    );
    expect(final.outcome).toBe("accepted");
    expect((await ended(runId)).run.state).toBe("completed");
    const doctor = await cli(["doctor"]);
    expect(doctor.stdout).toContain("Invariants: all hold");
  });
});

describe("deadlines while nobody runs", () => {
  it("records a decision's default at its deadline and refuses a later human answer", async () => {
    const runId = await start("defaulted.workflow.ts");
    const waiting = (await waitingAt(runId)).waiting;
    expect(waiting.default).toMatchObject({ answer: { choice: "hold" } });
    const done = await ended(runId);
    expect(done.run.output).toEqual({ shipped: false, gate: { choice: "hold" } });
    // Applied when it fell due, never before. How soon after is a figure for the idle-deadlines
    // bench (0-16 ms); here the bound only has to hold on a loaded 2-core machine.
    const gate = done.attempts.find((a: any) => a.nodeId === "gate");
    const lateness = gate.finishedAt - waiting.default.at;
    expect(lateness).toBeGreaterThanOrEqual(0);
    expect(lateness).toBeLessThan(5_000);
    const late = await cli(["answer", runId, "ship"]);
    expect(late.code).toBe(3);
    expect(late.stderr).toMatch(
      /^Host answered conflict: Answer refused: the deadline of human decision "gate" passed and its default was recorded at /,
    );
    expect(host.stderr()).toContain("decisionDefault.applied");
  });

  it("ends a checkpoint timed_out at its timeoutMs: it follows $result.outcome, else ends the run", async () => {
    const routed = await start("timed.workflow.ts");
    const bare = await start("timed-bare.workflow.ts");
    const long = await start("timed-long.workflow.ts");
    // Status shows the durable deadline while the checkpoint waits.
    const waiting = (await waitingAt(long)).waiting;
    expect(waiting.deadlineAt).toBeGreaterThan(waiting.since + 590_000);
    expect((await request("run.cancel", { runId: long, payload: {} })).receipt).toBeTruthy();
    const done = await ended(routed);
    expect(done.run).toMatchObject({ state: "completed", output: { outcome: "timed_out" } });
    expect(done.attempts[0]).toMatchObject({ state: "timed_out", error: { code: "nodeTimedOut" } });
    const failed = await ended(bare);
    expect(failed.run).toMatchObject({ state: "timed_out", error: { code: "nodeTimedOut" } });
    const late = await cli(["answer", routed, "now"]);
    expect(late.stderr).toMatch(
      /Answer refused: checkpoint "ask" timed out at .* before anyone answered/,
    );
  });
});
