/**
 * The run fields of a workflow source the resolver checked: one mapping from a resolve result to
 * what `enqueueRun` records, for `run.start`, a controller's child run and the test harnesses,
 * so a field the resolver adds reaches every run the same way.
 */
import * as v from "valibot";
import { type Budget, BudgetSchema } from "../protocol/budget.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { ResolveResult } from "../protocol/resolve-messages.ts";
import type { EnqueueRunOptions } from "../state/transitions/run-enqueue.ts";
import { canonicalWorkflowRef } from "../workflows/sources/identity.ts";

export type ResolvedSource = Extract<ResolveResult, { ok: true }>;

export type ResolvedRunFields = Pick<
  EnqueueRunOptions,
  | "workflowName"
  | "workflowRef"
  | "title"
  | "projectPath"
  | "workflowSource"
  | "definitionDigest"
  | "input"
  | "inputHash"
  | "budget"
>;

/**
 * `requested`: the workflow as the caller named it (the reference when the source has no root);
 * `projectPath`: the directory the run executes in. The run's budget is its workflow's own. The
 * definition snapshot is not among the fields: `run.start` stores it for viewers, a child run
 * does not.
 */
export function resolvedRunFields(
  resolved: ResolvedSource,
  requested: string,
  projectPath: string,
): ResolvedRunFields {
  return {
    workflowName: resolved.workflowName,
    workflowRef: canonicalWorkflowRef(resolved.workflowSource, requested),
    title: resolved.title,
    projectPath,
    workflowSource: resolved.workflowSource as JsonValue,
    definitionDigest: resolved.definitionDigest,
    input: resolved.input as JsonValue,
    inputHash: resolved.inputHash,
    ...budgetOf(resolved.definition),
  };
}

/**
 * Only the snapshot's budget is read: the resolver's answer was checked whole on arrival, and
 * checking every node and edge again cost each start 50-400 ms at 10,000 nodes (warm-cold).
 */
const SnapshotBudgetSchema = v.object({ budget: v.optional(BudgetSchema) });

/** The workflow's own budget (`defineWorkflow({ budget })`). */
function budgetOf(definition: unknown): { budget?: Budget } {
  const parsed = v.safeParse(SnapshotBudgetSchema, definition);
  const own = parsed.success ? parsed.output.budget : undefined;
  return own === undefined ? {} : { budget: { ...own } };
}
