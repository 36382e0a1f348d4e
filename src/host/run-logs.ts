/**
 * `run.logs` (protocol/log-operations.ts): a read, answered at once. For each step the stdout
 * and stderr files the worker wrote (base/step-output-files.ts), a headless agent step's
 * conversation from the run's Pi session file (pi-transcript.ts), an agent group's members'
 * conversations from their own session files (base/pi-session-files.ts; members run headless in
 * either execution mode), and the step's latest updates.
 * The whole answer stays within the answer budget: once it is spent the rest is left for the next
 * request (`more`), which continues from the cursors given.
 */
import { Buffer } from "node:buffer";
import { dirname, join } from "node:path";
import { type HostRequest, requestFor } from "../protocol/host-request.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import { type LogChunk, logCursorKey, type StepLog } from "../protocol/log-operations.ts";
import { type AttemptSummary, attemptVisit, listNodeAttempts } from "../state/attempt-queries.ts";
import { NotFoundError, RefusedError } from "../state/errors.ts";
import { listNodeUpdates, readRun } from "../state/queries.ts";
import { definitionNodeIds } from "./definition-nodes.ts";
import { formatStepCursor, parseStepCursor, readStepOutput } from "../base/step-output-files.ts";
import { memberSessionFiles, runSessionsRoot } from "../base/pi-session-files.ts";
import { ANSWER_BUDGET_BYTES } from "./answer-budget.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { readTranscript } from "./pi-transcript.ts";
import { closestName } from "../workflows/sources/closest-name.ts";

const DEFAULT_STEPS = 20;
const DEFAULT_STREAM_BYTES = 16 * 1024;
/** Nodes named in an unknown node's refusal (a message stays within the error's 8 KiB). */
const LISTED_NODES = 20;
const MODEL_KINDS = new Set(["agent", "decision", "assistantMessage"]);

/** One stream of a step: its output file, or a conversation in a Pi session file. */
type Source =
  | { stream: "stdout" | "stderr" }
  | { stream: "transcript"; file: string | null; member?: string };

export function runLogsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const logs = requestFor(request, "run.logs");
  const runId = logs.runId!;
  const payload = logs.payload;
  const run = readRun(rt.store, runId);
  if (!run) throw new NotFoundError("run", runId);
  const limit = payload.attemptLimit ?? DEFAULT_STEPS;
  const attempts = listNodeAttempts(rt.store, runId, payload.nodeId ?? null, limit + 1);
  // Checked on a first read only: a follow's later reads (with cursors) repeat a name it took.
  if (payload.nodeId !== undefined && attempts.length === 0 && payload.after === undefined) {
    refuseUnknownNode(rt, runId, run.definitionDigest, payload.nodeId);
  }
  const earlier = attempts.length > limit;
  const shown = earlier ? attempts.slice(1) : attempts;
  const stateDir = dirname(rt.store.path);
  const workers = join(stateDir, "workers");
  const sessionsRoot = runSessionsRoot(run.piSessionFile, stateDir, runId);
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
    const sources: Source[] = [];
    if (a.nodeKind === "agentGroup") {
      const visit = attemptVisit(rt.store, runId, a.nodeId, a.sequence);
      sources.push(...memberSources(a, memberSessionFiles(sessionsRoot, a.nodeId, visit)));
    } else if (model && run.executionMode === "headless") {
      sources.push({ stream: "transcript", file: run.piSessionFile });
    }
    sources.push({ stream: "stdout" }, { stream: "stderr" });
    for (const source of sources) {
      const cursor = after[logCursorKey(a.attemptId, source)];
      // JSON may make a byte six (a control character): read no more than that leaves room for.
      const room = Math.min(maxBytes, Math.floor(budget / 6));
      if (room < 256) {
        // Out of room: this stream waits for the next request, from where it was.
        more = true;
        continue;
      }
      const chunk = source.stream === "transcript"
        ? transcriptChunk(source, a, cursor, room)
        : outputChunk(workers, a.attemptId, source.stream, cursor, room);
      if (chunk === null) continue;
      budget -= Buffer.byteLength(JSON.stringify(chunk.text));
      step.streams.push(chunk);
    }
    return step;
  });
  return receiptResponse(logs, rt.epoch, {
    runId,
    state: run.state,
    paused: run.paused,
    steps,
    earlier,
    more,
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

/**
 * An agent group's members' conversations, in the group's member order as far as the attempt's
 * usage records it (every member that reached the model), then by id. A member's session holds
 * all its attempts' messages (a rerun continues its file): the attempt's time window picks its own.
 */
function memberSources(attempt: AttemptSummary, files: Map<string, string>): Source[] {
  const order = (attempt.usage?.members ?? []).map((m) => m.id);
  const rank = (id: string) => (order.includes(id) ? order.indexOf(id) : order.length);
  return [...files.keys()]
    .sort((x, y) => rank(x) - rank(y) || (x < y ? -1 : x > y ? 1 : 0))
    .map((member) => ({ stream: "transcript", file: files.get(member)!, member }));
}

function transcriptChunk(
  source: { file: string | null; member?: string },
  attempt: { attemptId: string; startedAt: number; finishedAt: number | null },
  cursor: string | undefined,
  maxBytes: number,
): LogChunk | null {
  if (source.file === null) return null;
  const from = cursor === undefined ? null : Number(cursor.split(":")[0]);
  const { attemptId, startedAt, finishedAt } = attempt;
  const read = readTranscript(source.file, { attemptId, startedAt, finishedAt }, from, maxBytes);
  return {
    stream: "transcript",
    ...(source.member === undefined ? {} : { member: source.member }),
    text: read.text,
    cursor: String(read.next),
    skipped: false,
  };
}

/**
 * A node the run's workflow does not have (a typo) is refused with the nodes it has (the first
 * LISTED_NODES, within any answer's bounds) and the nearest name: an empty answer would read as
 * "the step printed nothing". A node of the workflow that has not run yet answers empty
 * (`--follow` waits for it).
 */
function refuseUnknownNode(rt: HostRuntime, runId: string, digest: string, nodeId: string) {
  const nodes = definitionNodeIds(rt.store, digest);
  if (nodes === null || nodes.includes(nodeId)) return;
  const listed = nodes.slice(0, LISTED_NODES).join(", ") +
    (nodes.length > LISTED_NODES ? ` and ${nodes.length - LISTED_NODES} more` : "");
  const near = closestName(nodeId, nodes);
  throw new RefusedError(
    "notFound",
    "unknownNode",
    `run ${runId}'s workflow has no node "${nodeId}"; its nodes: ${listed}` +
      (near === null ? "" : `. Did you mean "${near}"?`),
  );
}
