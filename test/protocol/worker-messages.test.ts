import { describe, expect, test } from "vitest";
import {
  ATTEMPT_KINDS,
  checkWorkerFence,
  parseWorkerHeader,
  parseWorkerLaunch,
  parseWorkerMessage,
  parseWorkerPayload,
  parseWorkerReply,
  WORKER_LAUNCH_SCHEMA,
  WORKER_MESSAGE_KINDS,
  workerMessage,
  type WorkerMessageKind,
  workerReply,
} from "../../src/protocol/worker-messages.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { FACTS_CHUNK_CHARS } from "../../src/protocol/run-facts.ts";

const digest = fingerprint("x");

const launch = {
  schema: WORKER_LAUNCH_SCHEMA,
  runId: "run-1",
  generation: 2,
  workerEpoch: "we-1",
  projectPath: "/canonical/project",
  workflowSource: {
    root: { kind: "file", path: "/canonical/project/.pi/workflows/a.workflow.ts", hash: digest },
    mounted: [{ path: "/canonical/project/.pi/workflows/lib.ts", hash: digest }],
  },
  definitionDigest: digest,
  inputHash: digest,
  executionMode: "headless",
  protocolVersion: 1,
};

/** One valid payload per kind, and one it must refuse. */
const PAYLOADS: Record<WorkerMessageKind, { good: unknown; bad: unknown; badPath: string }> = {
  "worker.ready": { good: { pid: 1234 }, bad: { pid: 0 }, badPath: "payload.pid" },
  "node.started": {
    good: { nodeId: "a", nodeKind: "compute", effect: "pure", deadlineAt: null },
    bad: { nodeId: "a", nodeKind: "compute", effect: "maybe", deadlineAt: null },
    badPath: "payload.effect",
  },
  "node.update": {
    good: { type: "log", key: "k", data: { line: "hi" } },
    bad: { type: "", data: 1 },
    badPath: "payload.type",
  },
  "node.finished": { good: { output: [1, "two"] }, bad: {}, badPath: "payload.output" },
  "node.failed": {
    good: { outcome: "failed", error: { code: "nodeFailed", message: "boom" } },
    bad: { outcome: "ok", error: { code: "x", message: "y" } },
    badPath: "payload.outcome",
  },
  "run.parked": {
    good: { reason: "workflowSourceChanged", detail: "root hash differs" },
    bad: { reason: "bored" },
    badPath: "payload.reason",
  },
  "run.finished": {
    good: { state: "completed", output: { ok: true } },
    bad: { state: "failed" },
    badPath: "payload.error",
  },
  "interaction.requested": {
    good: { nodeId: "ask", requestKind: "agent", contract: { tool: "workflow" }, deadlineAt: 9 },
    bad: { nodeId: "ask", requestKind: "telepathy", contract: {}, deadlineAt: null },
    badPath: "payload.requestKind",
  },
  "interaction.accepted": {
    good: { interactionId: "i-1", submissionId: "s-1", output: "fine" },
    bad: { interactionId: "i-1", submissionId: "s-1" },
    badPath: "payload.output",
  },
  "interaction.rejected": {
    good: { interactionId: "i-1", submissionId: "s-1", error: { code: "invalid", message: "m" } },
    bad: { interactionId: "i-1", submissionId: "s-1", error: "m" },
    badPath: "payload.error",
  },
  "notification.requested": {
    good: { kind: "final", message: "Build done" },
    bad: { kind: "loud", message: "m" },
    badPath: "payload.kind",
  },
  "presentation.requested": {
    good: { prompt: "Tell the user" },
    bad: { prompt: 7 },
    badPath: "payload.prompt",
  },
  "effect.reserve": {
    good: {
      resource: "github:repo",
      effectType: "comment",
      idempotencyKey: "pr-1",
      requestFingerprint: digest,
      contract: "idempotencyKey",
    },
    bad: {
      resource: "r",
      effectType: "t",
      idempotencyKey: "k",
      requestFingerprint: "abc",
      contract: "idempotencyKey",
    },
    badPath: "payload.requestFingerprint",
  },
  "effect.settle": {
    good: { effectId: "e-1", outcome: "applied", receipt: { id: 5 } },
    bad: { effectId: "e-1", outcome: "probably" },
    badPath: "payload.outcome",
  },
  "worker.progress": {
    good: { op: "process.register", pid: 4321, startTime: "123456", processGroup: 4321 },
    bad: { op: "process.register", pid: 4321, startTime: "soon", processGroup: 4321 },
    badPath: "payload.startTime",
  },
  "worker.exiting": {
    good: { reason: "finished" },
    bad: { reason: "tired" },
    badPath: "payload.reason",
  },
};

function message(kind: WorkerMessageKind, payload: unknown, extra: Record<string, unknown> = {}) {
  return {
    schema: WORKER_LAUNCH_SCHEMA,
    kind,
    messageId: `m-${kind}`,
    runId: "run-1",
    generation: 2,
    workerEpoch: "we-1",
    ...(ATTEMPT_KINDS.has(kind) ? { attemptId: "att-1" } : {}),
    expectedRevision: 4,
    payload,
    ...extra,
  };
}

describe("parseWorkerLaunch()", () => {
  test("accepts the spec's envelope, file and builtin roots", () => {
    expect(parseWorkerLaunch(launch).ok).toBe(true);
    const builtin = {
      ...launch,
      workflowSource: { root: { kind: "builtin", id: "review", revision: "3" }, mounted: [] },
    };
    expect(parseWorkerLaunch(builtin).ok).toBe(true);
    const withPi = { ...launch, pi: { command: "/usr/bin/pi", args: ["--model", "m"] } };
    expect(parseWorkerLaunch(withPi).ok).toBe(true);
  });

  test("refuses a wrong envelope with the field path", () => {
    const cases: [unknown, string][] = [
      [{ ...launch, protocolVersion: 2 }, "launch.protocolVersion:"],
      [{ ...launch, generation: 0 }, "launch.generation:"],
      [{ ...launch, projectPath: "relative" }, "launch.projectPath:"],
      [{ ...launch, inputHash: "sha256:XYZ" }, "launch.inputHash:"],
      [{ ...launch, token: "secret" }, "launch.token: unknown field"],
      [{ ...launch, executionMode: "remote" }, "launch.executionMode:"],
      [{ ...launch, pi: { command: "pi", args: [] } }, "launch.pi.command:"],
      [{ ...launch, pi: { command: "/bin/pi", args: ["a\0b"] } }, "launch.pi.args.0:"],
      [
        { ...launch, workflowSource: { root: { kind: "url", path: "/x" }, mounted: [] } },
        "launch.workflowSource.root.kind:",
      ],
      [
        { ...launch, workflowSource: { root: launch.workflowSource.root } },
        "launch.workflowSource.mounted:",
      ],
      [[], "launch:"],
    ];
    for (const [value, prefix] of cases) {
      const parsed = parseWorkerLaunch(value);
      expect(parsed.ok, JSON.stringify(value)).toBe(false);
      if (!parsed.ok) expect(parsed.error.startsWith(prefix), parsed.error).toBe(true);
    }
  });
});

describe("worker messages", () => {
  test("the sixteen kinds of the spec", () => {
    expect(WORKER_MESSAGE_KINDS).toHaveLength(16);
    expect(new Set(WORKER_MESSAGE_KINDS).size).toBe(16);
  });

  for (const kind of WORKER_MESSAGE_KINDS) {
    test(`${kind}: a valid message parses`, () => {
      const parsed = parseWorkerMessage(message(kind, PAYLOADS[kind].good));
      if (!parsed.ok) throw new Error(parsed.error);
      expect(parsed.value.kind).toBe(kind);
    });

    test(`${kind}: a bad payload is refused with its path`, () => {
      const parsed = parseWorkerMessage(message(kind, PAYLOADS[kind].bad));
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) {
        expect(parsed.error.startsWith(`${PAYLOADS[kind].badPath}:`), parsed.error).toBe(true);
      }
    });
  }

  test("attempt kinds need an attempt id in the header", () => {
    for (const kind of ATTEMPT_KINDS) {
      const value = message(kind, PAYLOADS[kind].good) as Record<string, unknown>;
      delete value.attemptId;
      const parsed = parseWorkerHeader(value);
      expect(parsed).toMatchObject({
        ok: false,
        error: `message.attemptId: ${kind} needs the attempt id`,
      });
    }
  });

  test("the header is read without reading the payload", () => {
    // A stale worker's payload may be anything: the fence check must not depend on it.
    const stale = message("node.finished", { garbage: [1, 2, 3] }, { generation: 1 });
    const header = parseWorkerHeader(stale);
    if (!header.ok) throw new Error(header.error);
    const fence = { runId: "run-1", generation: 2, workerEpoch: "we-1" };
    expect(checkWorkerFence(header.value, fence)).toBe("generationChanged");
    expect(checkWorkerFence({ ...header.value, generation: 2, workerEpoch: "we-0" }, fence))
      .toBe("workerEpochChanged");
    expect(checkWorkerFence({ ...header.value, generation: 2, runId: "run-2" }, fence))
      .toBe("runChanged");
    expect(checkWorkerFence({ ...header.value, generation: 2 }, fence)).toBeNull();
    expect(parseWorkerPayload(header.value, stale).ok).toBe(false);
  });

  test("header problems are named", () => {
    const good = message("worker.ready", { pid: 1 });
    const cases: [unknown, string][] = [
      [{ ...good, schema: "pi-workflows.host-request.v1" }, "message.schema:"],
      [{ ...good, kind: "node.exploded" }, "message.kind:"],
      [{ ...good, messageId: "" }, "message.messageId:"],
      [{ ...good, generation: -1 }, "message.generation:"],
      [{ ...good, expectedRevision: "4" }, "message.expectedRevision:"],
      [{ ...good, token: "x" }, "message.token: unknown field"],
      ["worker.ready", "message:"],
      [[good], "message:"],
    ];
    for (const [value, prefix] of cases) {
      const parsed = parseWorkerHeader(value);
      expect(parsed.ok, JSON.stringify(value)).toBe(false);
      if (!parsed.ok) expect(parsed.error.startsWith(prefix), parsed.error).toBe(true);
    }
  });

  test("workerMessage() builds a message the parser accepts", () => {
    const built = workerMessage("node.update", {
      messageId: "m-9",
      runId: "run-1",
      generation: 3,
      workerEpoch: "we-2",
      attemptId: "att-4",
      expectedRevision: 10,
    }, { type: "progress", data: { done: 3 } });
    expect(built.schema).toBe(WORKER_LAUNCH_SCHEMA);
    const parsed = parseWorkerMessage(JSON.parse(JSON.stringify(built)));
    expect(parsed).toMatchObject({ ok: true, value: built });
  });

  test("run.finished: completed needs output, failures need an error", () => {
    const completedNoOutput = parseWorkerMessage(message("run.finished", { state: "completed" }));
    expect(completedNoOutput.ok).toBe(false);
    const timedOut = parseWorkerMessage(
      message("run.finished", {
        state: "timed_out",
        error: { code: "workerTimedOut", message: "m" },
      }),
    );
    expect(timedOut.ok).toBe(true);
    const mixed = parseWorkerMessage(
      message("run.finished", {
        state: "completed",
        output: 1,
        error: { code: "c", message: "m" },
      }),
    );
    expect(mixed.ok).toBe(false);
  });

  test("worker.progress: heartbeat, facts.next and unregister", () => {
    expect(parseWorkerMessage(message("worker.progress", { op: "heartbeat" })).ok).toBe(true);
    expect(parseWorkerMessage(message("worker.progress", { op: "facts.next" })).ok).toBe(true);
    expect(parseWorkerMessage(message("worker.progress", { op: "facts.next", from: 3 })).ok)
      .toBe(false);
    expect(
      parseWorkerMessage(
        message("worker.progress", { op: "process.unregister", pid: 9, startTime: "1" }),
      )
        .ok,
    ).toBe(true);
    expect(parseWorkerMessage(message("worker.progress", { op: "process.kill" })).ok).toBe(false);
  });
});

describe("worker replies", () => {
  const factsChunk = { text: '{"runId":"run-1"', done: false };

  test("accepted with a facts piece, claimLost and rejected with an error", () => {
    const ready = workerReply({ messageId: "m-1", outcome: "accepted", revision: 3, factsChunk });
    expect(parseWorkerReply(ready)).toMatchObject({ ok: true, value: ready });
    const lost = workerReply({
      messageId: "m-2",
      outcome: "claimLost",
      error: { code: "claimLost", message: "generation 3 owns the run" },
    });
    expect(parseWorkerReply(lost).ok).toBe(true);
  });

  test("refuses inconsistent or malformed replies", () => {
    expect(parseWorkerReply({ ...workerReply({ messageId: "m", outcome: "rejected" }) }).ok)
      .toBe(false);
    expect(
      parseWorkerReply(
        workerReply({ messageId: "m", outcome: "accepted", error: { code: "x", message: "y" } }),
      ).ok,
    ).toBe(false);
    const badFacts = parseWorkerReply({
      ...workerReply({ messageId: "m", outcome: "accepted" }),
      factsChunk: { text: "x".repeat(FACTS_CHUNK_CHARS + 1), done: true },
    });
    expect(badFacts).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^reply\.factsChunk\.text/),
    });
    const oldShape = parseWorkerReply({
      ...workerReply({ messageId: "m", outcome: "accepted" }),
      facts: { runId: "r" },
    });
    expect(oldShape.ok).toBe(false);
  });
});
