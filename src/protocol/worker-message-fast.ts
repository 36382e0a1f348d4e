/**
 * Hand-written checks for the hot worker messages: the header of every message, and the payloads
 * of `node.started`, `node.finished`, `node.failed`, `node.update` and `worker.progress`
 * heartbeats. They answer "valid" or "not sure", never "invalid": on "not sure" (undefined) the
 * caller runs the valibot schemas of worker-messages.ts, which stay the reference and produce
 * the error text. `test/protocol/worker-message-fast.test.ts` holds the two to the same verdicts
 * on generated and mutated messages.
 *
 * Values are frames straight from `JSON.parse`, so JSON-typed fields (`output`, `data`) are not
 * walked again: a parsed value is always a finite JSON value. (The one difference: valibot's
 * record drops own keys named `__proto__`, `prototype` and `constructor` from its output; these
 * checks keep the value as it was sent.)
 */
import { WORKER_LAUNCH_SCHEMA } from "./worker-launch.ts";
import { HEADER_KEYS, type WorkerMessageHeader } from "./worker-messages.ts";
import type { WorkerMessageKind, WorkerPayload } from "./worker-message-payloads.ts";

const ID = /^[\x21-\x7e]{1,200}$/;
const HOT_KINDS = new Set<string>([
  "node.started",
  "node.finished",
  "node.failed",
  "node.update",
  "worker.progress",
]);

type Record_ = Record<string, unknown>;

function isRecord(value: unknown): value is Record_ {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(value: unknown): value is string {
  return typeof value === "string" && ID.test(value);
}

function isSafeInt(value: unknown, min: number): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= min;
}

function isText(value: unknown, min: number, max: number): value is string {
  return typeof value === "string" && value.length >= min && value.length <= max;
}

/** Exactly the required keys (each present) plus optional ones. */
function hasKeys(value: Record_, required: readonly string[], optional: readonly string[] = []) {
  for (const key of Object.keys(value)) {
    if (!required.includes(key) && !optional.includes(key)) return false;
  }
  return required.every((key) => Object.hasOwn(value, key));
}

/** The header of a hot-kind message when it is certainly valid; otherwise undefined. */
export function fastWorkerHeader(value: unknown): WorkerMessageHeader | undefined {
  if (!isRecord(value)) return undefined;
  const m = value;
  if (m.schema !== WORKER_LAUNCH_SCHEMA || typeof m.kind !== "string" || !HOT_KINDS.has(m.kind)) {
    return undefined;
  }
  for (const key of Object.keys(m)) if (!HEADER_KEYS.has(key)) return undefined;
  if (!isId(m.messageId) || !isId(m.runId) || !isId(m.workerEpoch)) return undefined;
  if (!isSafeInt(m.generation, 1)) return undefined;
  const attemptId = m.attemptId;
  if (attemptId === undefined ? m.kind !== "worker.progress" : !isId(attemptId)) return undefined;
  if (m.expectedRevision !== undefined && !isSafeInt(m.expectedRevision, 0)) return undefined;
  const header: WorkerMessageHeader = {
    schema: WORKER_LAUNCH_SCHEMA,
    kind: m.kind as WorkerMessageKind,
    messageId: m.messageId,
    runId: m.runId,
    generation: m.generation,
    workerEpoch: m.workerEpoch,
  };
  if (attemptId !== undefined) header.attemptId = attemptId as string;
  if (m.expectedRevision !== undefined) header.expectedRevision = m.expectedRevision as number;
  return header;
}

function factError(value: unknown): { code: string; message: string } | undefined {
  if (!isRecord(value)) return undefined;
  // FactErrorSchema is a loose object: unknown keys are dropped, as valibot's output does.
  if (!isText(value.code, 0, 128) || !isText(value.message, 0, 8192)) return undefined;
  return { code: value.code, message: value.message };
}

/** The payload of a hot kind when it is certainly valid; otherwise undefined. */
export function fastWorkerPayload<K extends WorkerMessageKind>(
  kind: K,
  payload: unknown,
): WorkerPayload<K> | undefined {
  if (!isRecord(payload)) return undefined;
  const p = payload;
  switch (kind) {
    case "node.started": {
      if (!hasKeys(p, ["nodeId", "nodeKind", "effect", "deadlineAt"])) return undefined;
      if (!isText(p.nodeId, 1, 1000) || !isText(p.nodeKind, 1, 100)) return undefined;
      if (p.effect !== "pure" && p.effect !== "external") return undefined;
      if (p.deadlineAt !== null && !isSafeInt(p.deadlineAt, 0)) return undefined;
      return { ...p } as WorkerPayload<K>;
    }
    case "node.finished":
      return hasKeys(p, ["output"]) ? { output: p.output } as WorkerPayload<K> : undefined;
    case "node.failed": {
      if (!hasKeys(p, ["outcome", "error"])) return undefined;
      if (p.outcome !== "failed" && p.outcome !== "timed_out" && p.outcome !== "cancelled") {
        return undefined;
      }
      const error = factError(p.error);
      return error ? { outcome: p.outcome, error } as WorkerPayload<K> : undefined;
    }
    case "node.update": {
      if (!hasKeys(p, ["type", "data"], ["key"])) return undefined;
      if (!isText(p.type, 1, 100)) return undefined;
      if (p.key !== undefined && !isText(p.key, 0, 1000)) return undefined;
      return { ...p } as WorkerPayload<K>;
    }
    case "worker.progress":
      return hasKeys(p, ["op"]) && (p.op === "heartbeat" || p.op === "facts.next")
        ? { op: p.op } as WorkerPayload<K>
        : undefined;
    default:
      return undefined;
  }
}
