/**
 * Temporary local adapter for the resolver channel's two frames until the protocol layer
 * publishes them (requested in /work/coord/requests.md); replace with the protocol import.
 */
import * as v from "valibot";
import { JsonValueSchema } from "../protocol/run-facts.ts";
import { AbsolutePathSchema } from "../protocol/fields.ts";
import { parseWith, type SchemaResult } from "../protocol/schema-issues.ts";

export const RESOLVE_REQUEST_SCHEMA = "pi-workflows.resolve-request.v1";
export const RESOLVE_RESULT_SCHEMA = "pi-workflows.resolve-result.v1";

const ResolveRequestSchema = v.strictObject({
  schema: v.literal(RESOLVE_REQUEST_SCHEMA),
  workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  input: JsonValueSchema,
  cwd: AbsolutePathSchema,
  agentDir: v.optional(AbsolutePathSchema),
});
export type ResolveRequestFrame = v.InferOutput<typeof ResolveRequestSchema>;

export function parseResolveRequest(value: unknown): SchemaResult<ResolveRequestFrame> {
  return parseWith(ResolveRequestSchema, value, "request");
}
