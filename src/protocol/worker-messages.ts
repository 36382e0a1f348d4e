/**
 * Messages a worker proposes to the host over its private fd-3 channel. Each message is
 * `{schema, kind, messageId, runId, generation, workerEpoch, attemptId?, expectedRevision?,
 * payload}`. The host validates the header first and checks the fence (run, generation, worker
 * epoch) before it looks at the payload: a stale worker is answered `claimLost` without its
 * payload ever being read. The launch envelope and the host's replies are re-exported here so the
 * whole channel is one import.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, PositiveIntegerSchema, RevisionSchema } from "./fields.ts";
import { describeIssues, type SchemaResult } from "./schema-issues.ts";
import { WORKER_LAUNCH_SCHEMA } from "./worker-launch.ts";
import {
  ATTEMPT_KINDS,
  WORKER_MESSAGE_KINDS,
  WORKER_PAYLOAD_SCHEMAS,
  type WorkerMessageKind,
  type WorkerPayload,
} from "./worker-message-payloads.ts";

export * from "./worker-launch.ts";
export * from "./worker-reply.ts";
export * from "./worker-message-payloads.ts";

export const WorkerHeaderSchema = looseObject({
  schema: v.literal(WORKER_LAUNCH_SCHEMA),
  kind: v.picklist(WORKER_MESSAGE_KINDS, "Invalid kind: not a worker message kind"),
  /** Stable per message: a retry reuses it, so the host can answer from the stored receipt. */
  messageId: OpaqueIdSchema,
  runId: OpaqueIdSchema,
  generation: PositiveIntegerSchema,
  workerEpoch: OpaqueIdSchema,
  attemptId: v.optional(OpaqueIdSchema),
  expectedRevision: v.optional(RevisionSchema),
});

/** The keys a worker message header may carry (the fast checks share this list). */
export const HEADER_KEYS: ReadonlySet<string> = new Set([
  "schema",
  "kind",
  "messageId",
  "runId",
  "generation",
  "workerEpoch",
  "attemptId",
  "expectedRevision",
  "payload",
]);

export type WorkerMessageHeader = v.InferOutput<typeof WorkerHeaderSchema>;

export type WorkerMessage = {
  [K in WorkerMessageKind]: WorkerMessageHeader & { kind: K; payload: WorkerPayload<K> };
}[WorkerMessageKind];

export type WorkerMessageOf<K extends WorkerMessageKind> = Extract<WorkerMessage, { kind: K }>;

/** Reads only the header of an untrusted frame; the payload stays unread. */
export function parseWorkerHeader(value: unknown): SchemaResult<WorkerMessageHeader> {
  const result = v.safeParse(WorkerHeaderSchema, value);
  if (!result.success) return { ok: false, error: describeIssues(result.issues, "message") };
  const header = result.output;
  const extra = Object.keys(value as object).find((key) => !HEADER_KEYS.has(key));
  if (extra !== undefined) return { ok: false, error: `message.${extra}: unknown field` };
  if (ATTEMPT_KINDS.has(header.kind) && header.attemptId === undefined) {
    return { ok: false, error: `message.attemptId: ${header.kind} needs the attempt id` };
  }
  return { ok: true, value: header };
}

/** The fence a worker message must match: the active worker epoch of the run. */
export interface WorkerFence {
  runId: string;
  generation: number;
  workerEpoch: string;
}

/**
 * Null when the header matches the fence; otherwise the reason the sender is stale. The host
 * answers a stale sender `claimLost` once and does not read its payload.
 */
export function checkWorkerFence(
  header: Pick<WorkerMessageHeader, "runId" | "generation" | "workerEpoch">,
  fence: WorkerFence,
): "runChanged" | "generationChanged" | "workerEpochChanged" | null {
  if (header.runId !== fence.runId) return "runChanged";
  if (header.generation !== fence.generation) return "generationChanged";
  if (header.workerEpoch !== fence.workerEpoch) return "workerEpochChanged";
  return null;
}

/** Validates the payload of a message whose header already passed. */
export function parseWorkerPayload<K extends WorkerMessageKind>(
  header: WorkerMessageHeader & { kind: K },
  value: unknown,
): SchemaResult<WorkerMessageOf<K>> {
  const payload = (value as { payload?: unknown }).payload;
  const schema: v.GenericSchema<unknown, unknown> = WORKER_PAYLOAD_SCHEMAS[header.kind];
  const result = v.safeParse(schema, payload);
  if (!result.success) {
    return { ok: false, error: describeIssues(result.issues, "payload") };
  }
  return { ok: true, value: { ...header, payload: result.output } as WorkerMessageOf<K> };
}

/** Header then payload, for receivers that have no fence to check in between. */
export function parseWorkerMessage(value: unknown): SchemaResult<WorkerMessage> {
  const header = parseWorkerHeader(value);
  if (!header.ok) return header;
  return parseWorkerPayload(header.value, value);
}

/** Builds a message with the launch schema id; the caller supplies a stable messageId. */
export function workerMessage<K extends WorkerMessageKind>(
  kind: K,
  fields: Omit<WorkerMessageHeader, "schema" | "kind">,
  payload: WorkerPayload<K>,
): WorkerMessageOf<K> {
  return { schema: WORKER_LAUNCH_SCHEMA, kind, ...fields, payload } as WorkerMessageOf<K>;
}
