/**
 * `run.logs`: what a run's steps printed, for `pi-workflows logs` (a read: nothing changes, no
 * receipt is stored). Per step (the last `attemptLimit` attempts of the run, or of one node):
 * the stdout and stderr a shell node's command or an action's or compute's code printed, the
 * conversation of a headless agent step (of each member of an agent group, which always run
 * headless), and the step's latest updates. Without cursors each
 * stream is a tail; with the cursors of the previous answer, only what came since, which is how
 * `logs --follow` streams a running step. Secrets the worker held are redacted where the output
 * is written; the socket is the user's own.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, strictObject, TimestampSchema } from "./fields.ts";
import { UpdateSummarySchema } from "./run-operations.ts";

export const LOG_STREAMS = ["stdout", "stderr", "transcript"] as const;
export type LogStream = (typeof LOG_STREAMS)[number];

/** At most this many steps in one answer. */
export const MAX_LOG_STEPS = 50;
/** At most this many cursors in one request: every stream of every step, members' included. */
export const MAX_LOG_CURSORS = 1000;

/**
 * The name of a stream's cursor in `after`: `<attemptId>/<stream>`, and for an agent group
 * member's conversation `<attemptId>/transcript/<member>`.
 */
export function logCursorKey(
  attemptId: string,
  chunk: { stream: LogStream; member?: string },
): string {
  return chunk.member === undefined
    ? `${attemptId}/${chunk.stream}`
    : `${attemptId}/${chunk.stream}/${chunk.member}`;
}

export const RunLogsPayloadSchema = v.optional(
  strictObject({
    /** Only this node's attempts. */
    nodeId: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(1000))),
    attemptLimit: v.optional(
      v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_LOG_STEPS)),
    ),
    /**
     * Where the previous answer left each stream: its `logCursorKey` to its `cursor`. A
     * stream named here continues from there; any other starts with its tail.
     */
    after: v.optional(
      v.pipe(
        v.record(
          v.pipe(v.string(), v.maxLength(600)),
          v.pipe(v.string(), v.regex(/^[0-9]{1,12}(:[0-9]{1,12})?$/)),
        ),
        v.check((cursors) => Object.keys(cursors).length <= MAX_LOG_CURSORS, "too many cursors"),
      ),
    ),
    /** Bytes of one stream in one answer (default 16 KiB). */
    maxBytes: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(256), v.maxValue(262_144))),
  }),
  {},
);
export type RunLogsPayload = v.InferOutput<typeof RunLogsPayloadSchema>;

export const LogChunkSchema = looseObject({
  stream: v.picklist(LOG_STREAMS),
  /** An agent group member's conversation (a `transcript`): the member's id. */
  member: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(500))),
  text: v.string(),
  /** Give it back in `after` to get what follows. */
  cursor: v.string(),
  /** Output between the previous cursor and `text` was no longer kept. */
  skipped: v.boolean(),
});
export type LogChunk = v.InferOutput<typeof LogChunkSchema>;

export const StepLogSchema = looseObject({
  attemptId: OpaqueIdSchema,
  nodeId: v.string(),
  nodeKind: v.string(),
  sequence: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  state: v.string(),
  startedAt: TimestampSchema,
  finishedAt: v.optional(TimestampSchema),
  /** Why a step has no output here: `interactive` (it ran in the Pi session). */
  elsewhere: v.optional(v.picklist(["interactive"])),
  streams: v.array(LogChunkSchema),
  /** The step's latest update of each type and key. */
  updates: v.array(UpdateSummarySchema),
});
export type StepLog = v.InferOutput<typeof StepLogSchema>;

export const RunLogsReceiptSchema = looseObject({
  runId: OpaqueIdSchema,
  /** The run's state: a follower stops once it ended or needs someone. */
  state: v.string(),
  paused: v.boolean(),
  steps: v.array(StepLogSchema),
  /** The run (or node) has older attempts than `steps` shows. */
  earlier: v.boolean(),
  /** The answer was cut at its byte budget: ask again with the cursors for the rest. */
  more: v.boolean(),
});
export type RunLogsReceipt = v.InferOutput<typeof RunLogsReceiptSchema>;
