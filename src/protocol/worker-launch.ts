/**
 * The worker launch envelope, `pi-workflows.worker-launch.v1`: the first frame the host writes
 * on a worker's fd-3 channel. It names exactly one run generation and the source identity the
 * worker must verify before it loads any workflow code.
 *
 * It grants no authority: the worker never holds the claim token; the host keeps the claim and
 * fences the worker by (runId, generation, workerEpoch), all of which it checks on every message.
 * A headless run's envelope carries its provider `credentials` (held in memory only), so it goes
 * over the private channel only and is never logged or stored.
 */
import * as v from "valibot";
import {
  AbsolutePathSchema,
  DigestSchema,
  nonArray,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  strictObject,
} from "./fields.ts";
import { PiLaunchSchema } from "./pi-launch.ts";
import { RunEnvironmentSchema } from "./run-environment.ts";
import { EXECUTION_MODES } from "./execution-mode.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";

export const WORKER_LAUNCH_SCHEMA = "pi-workflows.worker-launch.v1";
export const WORKER_PROTOCOL_VERSION = 1;

const FileSourceSchema = v.strictObject({
  kind: v.literal("file"),
  /** Canonical real path. */
  path: AbsolutePathSchema,
  /** `sha256:<hex>` of the file bytes. */
  hash: DigestSchema,
});

const BuiltinSourceSchema = v.strictObject({
  kind: v.literal("builtin"),
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
  revision: v.pipe(v.string(), v.minLength(1), v.maxLength(200)),
});

export const SourceRootSchema = nonArray(
  v.variant("kind", [FileSourceSchema, BuiltinSourceSchema]),
);
export type SourceRoot = v.InferOutput<typeof SourceRootSchema>;

/** One file the definition loaded besides the root (relative imports, included workflows). */
export const MountedSourceSchema = v.union([
  strictObject({
    kind: v.optional(v.literal("file")),
    path: AbsolutePathSchema,
    hash: DigestSchema,
  }),
  BuiltinSourceSchema,
]);
export type MountedSource = v.InferOutput<typeof MountedSourceSchema>;

export const WorkflowSourceSchema = strictObject({
  root: SourceRootSchema,
  mounted: v.pipe(v.array(MountedSourceSchema), v.maxLength(10_000)),
});
export type WorkflowSource = v.InferOutput<typeof WorkflowSourceSchema>;

export const WorkerLaunchSchema = strictObject({
  schema: v.literal(WORKER_LAUNCH_SCHEMA),
  runId: OpaqueIdSchema,
  generation: PositiveIntegerSchema,
  workerEpoch: OpaqueIdSchema,
  projectPath: AbsolutePathSchema,
  workflowSource: WorkflowSourceSchema,
  definitionDigest: DigestSchema,
  inputHash: DigestSchema,
  /** Where agent steps run: the origin Pi session, or a supervised `pi --mode rpc` child. */
  executionMode: v.picklist(EXECUTION_MODES),
  /** Headless runs: the Pi command and model arguments recorded with the run. */
  pi: v.optional(PiLaunchSchema),
  /**
   * Headless runs: the run's Pi session file, chosen by the host and recorded with the run; every
   * Pi child of the run continues it (`--session`).
   */
  piSession: v.optional(AbsolutePathSchema),
  /**
   * Headless runs: provider credentials the host holds in memory for the run; the worker gives
   * them to its Pi children only (never to workflow code, shell nodes or its own environment).
   */
  credentials: v.optional(RunEnvironmentSchema),
  /**
   * Secrets the user named for the run (`--env NAME`), held in the host's memory only: the
   * worker adds them to its own environment, so its workflow code, shell and action nodes and
   * Pi children get them (never stored, shown or logged).
   */
  runSecrets: v.optional(RunEnvironmentSchema),
  protocolVersion: v.literal(WORKER_PROTOCOL_VERSION),
});
export type WorkerLaunch = v.InferOutput<typeof WorkerLaunchSchema>;

/** Validates the launch envelope the worker reads first; one-line error on failure. */
export function parseWorkerLaunch(value: unknown): SchemaResult<WorkerLaunch> {
  return parseWith(WorkerLaunchSchema, value, "launch");
}
