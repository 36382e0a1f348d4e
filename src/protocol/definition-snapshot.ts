/**
 * The function-free description of a compiled workflow graph (`compileWorkflow(...).snapshot`).
 * Its fingerprint is the run's definition digest. The resolver child returns it with a
 * `run.start`, the host stores it once per digest, and viewers and the Pi widget draw the graph
 * from it without loading workflow code. Node entries stay loose: each kind adds its own fields
 * (choices, effect, audience), and drawing needs only `kind` and a few optional labels.
 */
import * as v from "valibot";
import { BudgetSchema } from "./budget.ts";
import { nonArray } from "./fields.ts";

export const DEFINITION_SNAPSHOT_SCHEMA = "pi-workflows.definition-snapshot.v1";

const NameSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));

export const SnapshotNodeSchema = v.looseObject({
  kind: NameSchema,
  /** Short label an author gave the node for status views. */
  statusDetail: v.optional(v.string()),
  /** A fixed timeout in ms, `"default"`, `"callback"`, or null for none. */
  timeoutMs: v.optional(v.union([v.number(), v.string(), v.null()])),
});
export type SnapshotNode = v.InferOutput<typeof SnapshotNodeSchema>;

export const SnapshotEdgeSchema = v.variant("kind", [
  v.looseObject({ kind: v.literal("plain"), to: NameSchema }),
  v.looseObject({
    kind: v.literal("switch"),
    on: v.string(),
    cases: v.record(v.string(), NameSchema),
  }),
]);
export type SnapshotEdge = v.InferOutput<typeof SnapshotEdgeSchema>;

export const DefinitionSnapshotSchema = v.looseObject({
  schema: v.literal(DEFINITION_SNAPSHOT_SCHEMA),
  name: NameSchema,
  startAt: NameSchema,
  /** Flattened node id (`mount/child` inside includes) -> node. */
  nodes: nonArray(v.record(v.string(), SnapshotNodeSchema)),
  /** Source node id -> its one outgoing edge. */
  edges: nonArray(v.record(v.string(), SnapshotEdgeSchema)),
  /** The workflow's own budget (`defineWorkflow({ budget })`). */
  budget: v.optional(BudgetSchema),
});
export type DefinitionSnapshot = v.InferOutput<typeof DefinitionSnapshotSchema>;

/** The snapshot, or undefined when `value` is not one (a viewer then draws no graph). */
export function parseDefinitionSnapshot(value: unknown): DefinitionSnapshot | undefined {
  const result = v.safeParse(DefinitionSnapshotSchema, value);
  return result.success ? result.output : undefined;
}
