/**
 * The controller source resolver (`pi-workflows worker --resolve-controller`): the host never
 * loads controller code, so `controller.apply` asks this child to load the controller named by
 * the discovery rules, report its source identity, and compute `initialStatus(spec)`. One child
 * answers a series of requests (each frame one request, each answer names its `requestId`) and
 * reloads whenever a file of the loaded source changed.
 */
import * as v from "valibot";
import { ControllerNameSchema } from "./controller-resource.ts";
import {
  AbsolutePathSchema,
  DigestSchema,
  nonArray,
  OpaqueIdSchema,
  strictObject,
} from "./fields.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";
import { WorkflowSourceSchema } from "./worker-launch.ts";

export const CONTROLLER_RESOLVE_REQUEST_SCHEMA = "pi-workflows.controller-resolve-request.v1";
export const CONTROLLER_RESOLVE_RESULT_SCHEMA = "pi-workflows.controller-resolve-result.v1";

export const ControllerResolveRequestSchema = strictObject({
  schema: v.literal(CONTROLLER_RESOLVE_REQUEST_SCHEMA),
  requestId: OpaqueIdSchema,
  /** A controller name (discovered) or a path to a `.controller.ts` file. */
  controller: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  cwd: AbsolutePathSchema,
  agentDir: v.optional(AbsolutePathSchema),
  spec: JsonValueSchema,
});
export type ControllerResolveRequest = v.InferOutput<typeof ControllerResolveRequestSchema>;

export const ControllerResolveResultSchema = nonArray(v.variant("ok", [
  v.strictObject({
    schema: v.literal(CONTROLLER_RESOLVE_RESULT_SCHEMA),
    requestId: OpaqueIdSchema,
    ok: v.literal(true),
    name: ControllerNameSchema,
    sourceRef: AbsolutePathSchema,
    source: WorkflowSourceSchema,
    sourceDigest: DigestSchema,
    /** The agent directory whose `controllers/` folder discovery searched. */
    agentDir: AbsolutePathSchema,
    timeoutMs: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    /** `initialStatus(spec)` (the new resource's `controllerStatus`). */
    initialStatus: JsonValueSchema,
  }),
  v.strictObject({
    schema: v.literal(CONTROLLER_RESOLVE_RESULT_SCHEMA),
    requestId: OpaqueIdSchema,
    ok: v.literal(false),
    code: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
    message: v.pipe(v.string(), v.maxLength(8192)),
  }),
]));
export type ControllerResolveResult = v.InferOutput<typeof ControllerResolveResultSchema>;

export function parseControllerResolveRequest(
  value: unknown,
): SchemaResult<ControllerResolveRequest> {
  return parseWith(ControllerResolveRequestSchema, value, "request");
}

export function parseControllerResolveResult(
  value: unknown,
): SchemaResult<ControllerResolveResult> {
  return parseWith(ControllerResolveResultSchema, value, "result");
}
