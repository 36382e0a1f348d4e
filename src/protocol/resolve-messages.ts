/**
 * The source-resolver child channel (fd 3, the same bounded framing as the worker channel). The
 * host never loads workflow code: to validate a `run.start` it spawns `pi-workflows worker
 * --resolve`, writes one resolve request, and reads one resolve result.
 */
import * as v from "valibot";
import { JsonValueSchema } from "./run-facts.ts";
import { AbsolutePathSchema, DigestSchema, nonArray, strictObject } from "./fields.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";
import { WorkflowSourceSchema } from "./worker-launch.ts";
import { DefinitionSnapshotSchema } from "./definition-snapshot.ts";

export const RESOLVE_REQUEST_SCHEMA = "pi-workflows.resolve-request.v1";
export const RESOLVE_RESULT_SCHEMA = "pi-workflows.resolve-result.v1";

export const ResolveRequestSchema = strictObject({
  schema: v.literal(RESOLVE_REQUEST_SCHEMA),
  /** Workflow name, `builtin:<id>`, or a path (absolute, or relative to `cwd`). */
  workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  /** Raw input before the workflow's own normalizer. */
  input: JsonValueSchema,
  cwd: AbsolutePathSchema,
  /** The Pi agent directory whose `workflows/` folder is searched (user workflows). */
  agentDir: v.optional(AbsolutePathSchema),
});
export type ResolveRequestMessage = v.InferOutput<typeof ResolveRequestSchema>;

export const ResolveResultSchema = nonArray(v.variant("ok", [
  v.strictObject({
    schema: v.literal(RESOLVE_RESULT_SCHEMA),
    ok: v.literal(true),
    workflowName: v.pipe(v.string(), v.minLength(1), v.maxLength(1000)),
    title: v.nullable(v.pipe(v.string(), v.maxLength(1000))),
    /** Source identity exactly as the launch envelope carries it. */
    workflowSource: WorkflowSourceSchema,
    definitionDigest: DigestSchema,
    /** The function-free graph the digest fingerprints (stored for viewers). */
    definition: DefinitionSnapshotSchema,
    /** The normalized input and its fingerprint. */
    input: JsonValueSchema,
    inputHash: DigestSchema,
    /** Whether the definition has steps that need an origin Pi session. */
    needsInteractive: v.boolean(),
    /** Whether any step talks to a model (a headless run then needs Pi). */
    needsAgent: v.boolean(),
  }),
  v.strictObject({
    schema: v.literal(RESOLVE_RESULT_SCHEMA),
    ok: v.literal(false),
    code: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
    message: v.pipe(v.string(), v.maxLength(8192)),
  }),
]));
export type ResolveResultMessage = v.InferOutput<typeof ResolveResultSchema>;

export function parseResolveRequest(value: unknown): SchemaResult<ResolveRequestMessage> {
  return parseWith(ResolveRequestSchema, value, "resolve");
}

export function parseResolveResult(value: unknown): SchemaResult<ResolveResultMessage> {
  return parseWith(ResolveResultSchema, value, "result");
}

/** What the host gets from a resolver child: the result message minus its schema tag. */
export type ResolveResult = ResolveResultMessage extends infer M
  ? M extends ResolveResultMessage ? Omit<M, "schema"> : never
  : never;
