/**
 * The run fields of a workflow source the resolver checked: one mapping from a resolve result to
 * what `enqueueRun` records, for `run.start`, a controller's child run and the test harnesses,
 * so a field the resolver adds reaches every run the same way.
 */
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
 * `projectPath`: the directory the run executes in. The run's budget is its workflow's own. The
 * definition snapshot is not among the fields: `run.start` stores it for viewers, a child run
 * does not.
 */
export function resolvedRunFields(
  resolved: ResolvedSource,
  projectPath: string,
): ResolvedRunFields {
  return {
    workflowName: resolved.workflowName,
    workflowRef: canonicalWorkflowRef(resolved.workflowSource),
    title: resolved.title,
    projectPath,
    workflowSource: resolved.workflowSource,
    definitionDigest: resolved.definitionDigest,
    input: resolved.input,
    inputHash: resolved.inputHash,
    ...(resolved.definition.budget ? { budget: { ...resolved.definition.budget } } : {}),
  };
}
