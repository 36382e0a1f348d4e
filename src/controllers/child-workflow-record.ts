/**
 * What `ctx.workflows.ensure` resolves to: the child's reference (what the host answers and
 * `status.workflowRun` keeps) plus the request it answers, under the names 0.12's child workflow
 * record had (`resourceUid`, `requestKey`, `inputFingerprint`, `workflow`). Its `error` becomes
 * the message wherever a string is made of it, as 0.12's string did (workflows/result-error.ts).
 * Such a record passed as `workflowRun` (0.12 code does) is kept as its reference.
 */
import { canonicalJson, type JsonValue, sha256Hex } from "../protocol/canonical-json.ts";
import type { ChildWorkflowRef } from "../protocol/controller-resource.ts";
import { resultError } from "../workflows/result-error.ts";
import type { ChildWorkflowRecord } from "./types.ts";

const REQUEST_FIELDS = ["resourceUid", "requestKey", "inputFingerprint", "workflow"] as const;

export function childWorkflowRecord(
  ref: ChildWorkflowRef,
  request: { resourceUid: string; requestKey: string; workflow: string; input: JsonValue },
): ChildWorkflowRecord {
  const { error, ...rest } = ref;
  return {
    ...rest,
    ...(error ? { error: resultError(error) } : {}),
    resourceUid: request.resourceUid,
    requestKey: request.requestKey,
    // 0.12's form: the hex sha256 of the input's canonical JSON.
    inputFingerprint: sha256Hex(canonicalJson(request.input)),
    workflow: request.workflow,
  };
}

/** A `workflowRun` patch value without the request fields a record adds to its reference. */
export function workflowRunRef(value: unknown): unknown {
  if (typeof value !== "object" || value === null || !Object.hasOwn(value, "requestKey")) {
    return value;
  }
  const ref: Record<string, unknown> = { ...value };
  for (const field of REQUEST_FIELDS) delete ref[field];
  return ref;
}
