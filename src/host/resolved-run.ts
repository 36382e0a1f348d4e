/**
 * The run fields of a workflow source the resolver checked: one mapping from a resolve result to
 * what `enqueueRun` records, for `run.start`, a controller's child run and the test harnesses,
 * so a field the resolver adds reaches every run the same way.
 */
import { type Budget, tighterBudget } from "../protocol/budget.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseDefinitionSnapshot } from "../protocol/definition-snapshot.ts";
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
 * `projectPath`: the directory the run executes in; `limit`: a budget the run takes where it is
 * smaller than the workflow's own (a controller's, for its child run). The definition snapshot
 * is not among the fields: `run.start` stores it for viewers, a child run does not.
 */
export function resolvedRunFields(
  resolved: ResolvedSource,
  requested: string,
  projectPath: string,
  limit?: Budget,
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
    ...budgetOf(resolved.definition, limit),
  };
}

/** The workflow's own budget (`defineWorkflow({ budget })`), tightened by `limit`. */
function budgetOf(definition: unknown, limit: Budget | undefined): { budget?: Budget } {
  const own = parseDefinitionSnapshot(definition)?.budget;
  if (own === undefined && limit === undefined) return {};
  return { budget: tighterBudget(own, limit) };
}
