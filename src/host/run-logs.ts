/**
 * `run.logs` (protocol/log-operations.ts): a read, answered at once. For each step the stdout
 * and stderr files the worker wrote (base/step-output-files.ts), a headless agent step's
 * conversation from the run's Pi session file (pi-transcript.ts), and the step's latest updates.
 * The whole answer stays within the answer budget: once it is spent the rest is left for the next
 * request (`more`), which continues from the cursors given.
 */
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, successResponse } from "../protocol/host-response.ts";
import type { LogChunk, LogStream, StepLog } from "../protocol/log-operations.ts";
import { listNodeAttempts } from "../state/attempt-queries.ts";
import { NotFoundError } from "../state/errors.ts";
import { listNodeUpdates, readRun } from "../state/queries.ts";
import { formatStepCursor, parseStepCursor, readStepOutput } from "../base/step-output-files.ts";
import { ANSWER_BUDGET_BYTES } from "./answer-budget.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { readTranscript } from "./pi-transcript.ts";

const DEFAULT_STEPS = 20;
const DEFAULT_STREAM_BYTES = 16 * 1024;
const MODEL_KINDS = new Set(["agent", "decision", "assistantMessage", "agentGroup"]);

export function runLogsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.logs") throw new TypeError("Expected run.logs");
  const runId = request.runId!;
  const payload = request.payload;
  const run = readRun(rt.store, runId);
  if (!run) throw new NotFoundError("run", runId);
  const limit = payload.attemptLimit ?? DEFAULT_STEPS;
  const attempts = listNodeAttempts(rt.store, runId, payload.nodeId ?? null, limit + 1);
  const earlier = attempts.length > limit;
  const shown = earlier ? attempts.slice(1) : attempts;
  const workers = join(dirname(rt.store.path), "workers");
  const after = payload.after ?? {};
  const maxBytes = payload.maxBytes ?? DEFAULT_STREAM_BYTES;
  const updates = listNodeUpdates(rt.store, runId, 200);
  // Half the answer budget for text: the rest is room for the envelope and the updates.
  let budget = Math.floor(ANSWER_BUDGET_BYTES / 2);
  let more = false;
  const steps: StepLog[] = shown.map((a) => {
    const step: StepLog = {
      attemptId: a.attemptId,
      nodeId: a.nodeId,
      nodeKind: a.nodeKind,
      sequence: a.sequence,
      state: a.state,
      startedAt: a.startedAt,
      streams: [],
      updates: updates.filter((u) => u.attemptId === a.attemptId).reverse(),
    };
    if (a.finishedAt !== null) step.finishedAt = a.finishedAt;
    const model = MODEL_KINDS.has(a.nodeKind);
    if (model && run.executionMode === "interactive") step.elsewhere = "interactive";
    const names: LogStream[] = model && run.executionMode === "headless"
      ? ["transcript", "stdout", "stderr"]
      : ["stdout", "stderr"];
    for (const stream of names) {
      const key = `${a.attemptId}/${stream}`;
      const cursor = after[key];
      // JSON may make a byte six (a control character): read no more than that leaves room for.
      const room = Math.min(maxBytes, Math.floor(budget / 6));
      if (room < 256) {
        // Out of room: this stream waits for the next request, from where it was.
        more = true;
        continue;
      }
      const chunk = stream === "transcript"
        ? transcriptChunk(run.piSessionFile, a, cursor, room)
        : outputChunk(workers, a.attemptId, stream, cursor, room);
      if (chunk === null) continue;
      budget -= Buffer.byteLength(JSON.stringify(chunk.text));
      step.streams.push(chunk);
    }
    return step;
  });
  return successResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    receipt: {
      runId,
      state: run.state,
      paused: run.paused,
      steps: steps as unknown as JsonValue,
      earlier,
      more,
    },
  });
}

function outputChunk(
  dir: string,
  attemptId: string,
  stream: "stdout" | "stderr",
  cursor: string | undefined,
  maxBytes: number,
): LogChunk | null {
  const from = cursor === undefined ? null : parseStepCursor(cursor);
  const read = readStepOutput(dir, attemptId, stream, from, maxBytes);
  // A stream that never printed is left out until it does.
  if (cursor === undefined && read.text === "" && read.next.offset === 0) return null;
  return { stream, text: read.text, cursor: formatStepCursor(read.next), skipped: read.skipped };
}

function transcriptChunk(
  sessionFile: string | null,
  attempt: { startedAt: number; finishedAt: number | null },
  cursor: string | undefined,
  maxBytes: number,
): LogChunk | null {
  if (sessionFile === null) return null;
  const from = cursor === undefined ? null : Number(cursor.split(":")[0]);
  const read = readTranscript(sessionFile, attempt, from, maxBytes);
  return { stream: "transcript", text: read.text, cursor: String(read.next), skipped: false };
}
