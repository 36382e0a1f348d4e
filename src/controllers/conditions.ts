/**
 * Condition helpers and the status patch rules. A condition is `{type, status, reason, message?}`
 * as the controller reports it; merging adds the generation it was observed at and keeps its
 * transition time while its status stays the same.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { Condition, ConditionStatus } from "../protocol/controller-resource.ts";
import type { ConditionInput, ControllerStatus, StatusPatch } from "./types.ts";

/**
 * A condition's message: text, or an error such as a failed child's `error` (`{code, message}`),
 * whose message is used (0.12 gave that error as a string and controllers pass it on).
 */
export type ConditionMessage = string | { message: string };

export function conditionTrue(
  type: string,
  reason: string,
  message?: ConditionMessage,
): ConditionInput {
  return condition(type, true, reason, message);
}

export function conditionFalse(
  type: string,
  reason: string,
  message?: ConditionMessage,
): ConditionInput {
  return condition(type, false, reason, message);
}

export function conditionUnknown(
  type: string,
  reason: string,
  message?: ConditionMessage,
): ConditionInput {
  return condition(type, "unknown", reason, message);
}

/** The condition of `type`, or undefined. */
export function findCondition(
  conditions: readonly Condition[],
  type: string,
): Condition | undefined {
  return conditions.find((c) => c.type === type);
}

/** Whether the condition of `type` has status `true`. */
export function isConditionTrue(conditions: readonly Condition[], type: string): boolean {
  return findCondition(conditions, type)?.status === true;
}

function condition(
  type: string,
  status: ConditionStatus,
  reason: string,
  given: ConditionMessage | undefined,
): ConditionInput {
  // Anything else is left for checkCondition to refuse with its message.
  const message =
    (typeof given === "object" && given !== null && typeof given.message === "string"
      ? given.message
      : given) as string | undefined;
  const value: ConditionInput = {
    type,
    status,
    reason,
    ...(message !== undefined ? { message } : {}),
  };
  checkCondition(value);
  return value;
}

function checkCondition(value: ConditionInput): void {
  if (typeof value?.type !== "string" || value.type.trim() === "" || value.type.length > 128) {
    throw new TypeError("Invalid condition: type must be 1-128 characters");
  }
  if (typeof value.reason !== "string" || value.reason.trim() === "" || value.reason.length > 128) {
    throw new TypeError(`Invalid condition "${value.type}": reason must be 1-128 characters`);
  }
  if (value.status !== true && value.status !== false && value.status !== "unknown") {
    throw new TypeError(
      `Invalid condition "${value.type}": status must be true, false or "unknown"`,
    );
  }
  if (
    value.message !== undefined &&
    (typeof value.message !== "string" || value.message.length > 4096)
  ) {
    throw new TypeError(
      `Invalid condition "${value.type}": message must be at most 4096 characters`,
    );
  }
}

/** Merges condition updates by type (each type at most once per patch). */
export function mergeConditions(
  current: readonly Condition[],
  updates: readonly ConditionInput[],
  generation: number,
  now: string,
): Condition[] {
  const byType = new Map(current.map((c) => [c.type, c]));
  const seen = new Set<string>();
  for (const update of updates) {
    checkCondition(update);
    if (seen.has(update.type)) {
      throw new TypeError(`Invalid status patch: condition "${update.type}" appears twice`);
    }
    seen.add(update.type);
    const previous = byType.get(update.type);
    byType.set(update.type, {
      type: update.type,
      status: update.status,
      reason: update.reason,
      ...(update.message !== undefined ? { message: update.message } : {}),
      observedGeneration: generation,
      lastTransitionTime: previous !== undefined && previous.status === update.status
        ? previous.lastTransitionTime
        : now,
    });
  }
  return [...byType.values()];
}

/**
 * The status after a successful reconcile of `generation`: `observedGeneration` moves up, the
 * patch's fields replace or merge into the current ones.
 */
export function applyStatusPatch<TStatus = JsonValue>(
  current: ControllerStatus<TStatus>,
  patch: StatusPatch<TStatus> | undefined,
  generation: number,
  now: string,
): ControllerStatus<TStatus> {
  const next: ControllerStatus<TStatus> = {
    observedGeneration: generation,
    conditions: mergeConditions(current.conditions, patch?.conditions ?? [], generation, now),
    controllerStatus: patch !== undefined && Object.hasOwn(patch, "controllerStatus")
      ? patch.controllerStatus as TStatus
      : current.controllerStatus,
  };
  const run = patch?.workflowRun === undefined ? current.workflowRun : patch.workflowRun;
  if (run !== null && run !== undefined) next.workflowRun = run;
  return next;
}
