/**
 * The validation child channel (fd 3, the bounded framing of the worker channel). An interactive
 * submission is checked by workflow code (tolerant JSON parsing, then the node's `validate`),
 * which the host never runs: it spawns `pi-workflows worker --validate`, writes one validate
 * request, and reads ONE verdict back, `interaction.accepted` or `interaction.rejected`, with the
 * launch header of the request (run, generation, worker epoch), which it fences like any worker
 * message before it commits the verdict and replies. Before its verdict the child reads the
 * run's committed facts (what the node's `validate` context reads) in bounded pieces: the first
 * rides in the request when it fits, the others come with `worker.progress {op: "facts.next"}`,
 * as workers ask after `worker.ready`: the facts of a long run pass no single message.
 */
import * as v from "valibot";
import { OpaqueIdSchema, PositiveIntegerSchema, strictObject } from "./fields.ts";
import { FactsChunkSchema, JsonValueSchema } from "./run-facts.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";
import { WorkerLaunchSchema } from "./worker-launch.ts";

export const VALIDATE_REQUEST_SCHEMA = "pi-workflows.validate-request.v1";

export const ValidateRequestSchema = strictObject({
  schema: v.literal(VALIDATE_REQUEST_SCHEMA),
  /** The run's source identity and the header the child's answer must carry. */
  launch: WorkerLaunchSchema,
  interactionId: OpaqueIdSchema,
  submissionId: OpaqueIdSchema,
  nodeId: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
  attemptId: OpaqueIdSchema,
  /** The raw `output` of the tool call. */
  submission: JsonValueSchema,
  /**
   * The first piece of the run's facts when the request can carry it (the child asks for the
   * rest, or for all of them without it, with `facts.next`).
   */
  facts: v.optional(FactsChunkSchema),
  /**
   * To a run's prepared process only: the header of the epoch an acceptance launches in it (the
   * next claim generation and a worker epoch the host chose). The process may decide and render
   * that epoch's first step from the facts the acceptance makes and send its messages inside the
   * verdict (`interaction.accepted` `next`); nothing of them counts unless the host commits them
   * with the acceptance under exactly this header.
   */
  next: v.optional(
    strictObject({ generation: PositiveIntegerSchema, workerEpoch: OpaqueIdSchema }),
  ),
});
export type ValidateRequest = v.InferOutput<typeof ValidateRequestSchema>;

export function parseValidateRequest(value: unknown): SchemaResult<ValidateRequest> {
  return parseWith(ValidateRequestSchema, value, "validate");
}
