/**
 * The host's answer to one worker message, correlated by `messageId`. A retried message (same
 * messageId) gets the same stored answer. `claimLost` tells a stale worker to exit at once.
 */
import * as v from "valibot";
import { type FactsChunk, FactsChunkSchema, JsonValueSchema } from "./run-facts.ts";
import type { JsonValue } from "./canonical-json.ts";
import {
  checkWithJsonSchema,
  ErrorInfoSchema,
  OpaqueIdSchema,
  RevisionSchema,
  strictObject,
} from "./fields.ts";
import type { ErrorInfo } from "./fields.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";

export const WORKER_REPLY_SCHEMA = "pi-workflows.worker-reply.v1";

export const WORKER_REPLY_OUTCOMES = ["accepted", "rejected", "claimLost"] as const;
export type WorkerReplyOutcome = (typeof WORKER_REPLY_OUTCOMES)[number];

const WorkerReplyFieldsSchema = strictObject({
  schema: v.literal(WORKER_REPLY_SCHEMA),
  messageId: OpaqueIdSchema,
  outcome: v.picklist(WORKER_REPLY_OUTCOMES),
  /** The run revision after the message was applied; the worker's next expectedRevision. */
  revision: v.optional(RevisionSchema),
  /**
   * On the replies to `worker.ready` and `worker.progress {op: "facts.next"}`: the next piece of
   * the JSON text of the committed facts the engine resumes from (run-facts.ts).
   */
  factsChunk: v.optional(FactsChunkSchema),
  /** Kind-specific answer, e.g. `{effectId, state, receipt?}` for `effect.reserve`. */
  result: v.optional(JsonValueSchema),
  error: v.optional(ErrorInfoSchema),
});

export interface WorkerReply {
  schema: typeof WORKER_REPLY_SCHEMA;
  messageId: string;
  outcome: WorkerReplyOutcome;
  revision?: number;
  factsChunk?: FactsChunk;
  result?: JsonValue;
  error?: ErrorInfo;
}

export const WorkerReplySchema: v.GenericSchema<unknown, WorkerReply> = v.pipe(
  WorkerReplyFieldsSchema,
  checkWithJsonSchema<v.InferOutput<typeof WorkerReplyFieldsSchema>>(
    (r) => r.outcome === "accepted" ? r.error === undefined : r.error !== undefined,
    "Invalid reply: accepted carries no error; rejected and claimLost carry one",
    {
      if: { properties: { outcome: { const: "accepted" } } },
      then: { not: { required: ["error"] } },
      else: { required: ["error"] },
    },
  ),
);

export function parseWorkerReply(value: unknown): SchemaResult<WorkerReply> {
  return parseWith(WorkerReplySchema, value, "reply");
}

/** Builds a reply; `error` is required unless the outcome is `accepted`. */
export function workerReply(fields: Omit<WorkerReply, "schema">): WorkerReply {
  return { schema: WORKER_REPLY_SCHEMA, ...fields };
}

/** A refusal of one message: nothing of it was applied. */
export function rejectedReply(messageId: string, code: string, message: string): WorkerReply {
  return workerReply({ messageId, outcome: "rejected", error: { code, message } });
}

/** The message id of a frame that failed its checks, when a refusal can name it; else null. */
export function replyableId(value: unknown): string | null {
  const id = (value as { messageId?: unknown } | null)?.messageId;
  return typeof id === "string" && id.length > 0 && id.length <= 200 ? id : null;
}

/** The sender's claim is gone (`Claim lost: <detail>`): it must exit at once. */
export function claimLostReply(messageId: string, detail: string): WorkerReply {
  return workerReply({
    messageId,
    outcome: "claimLost",
    error: { code: "claimLost", message: `Claim lost: ${detail}` },
  });
}
