/** `defineController`: checks the shape eagerly and brands the definition. */
import * as v from "valibot";
import { BudgetSchema } from "../protocol/budget.ts";
import { CONTROLLER_NAME_PATTERN } from "../protocol/controller-resource.ts";
import { describeIssues } from "../protocol/schema-issues.ts";
import { WorkflowDefinitionError } from "../workflows/errors.ts";
import { CONTROLLER_BRAND, type ControllerDefinition, type ControllerSpec } from "./types.ts";

export const DEFAULT_RECONCILE_TIMEOUT_MS = 60_000;
/** A reconcile is one short pass; long work belongs in a child workflow. */
export const MAX_RECONCILE_TIMEOUT_MS = 60 * 60_000;

export function defineController<TSpec, TStatus>(
  spec: ControllerSpec<TSpec, TStatus>,
): ControllerDefinition<TSpec, TStatus> {
  const fail = (problem: string): never => {
    const name = typeof (spec as { name?: unknown })?.name === "string"
      ? ` "${(spec as { name: string }).name}"`
      : "";
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid controller definition${name}: ${problem}`,
    );
  };
  if (typeof spec !== "object" || spec === null) {
    return fail("expected an object passed to defineController");
  }
  if (typeof spec.name !== "string" || !CONTROLLER_NAME_PATTERN.test(spec.name)) {
    fail("name: expected a lowercase letter, then up to 62 of [a-z0-9-]");
  }
  if (typeof spec.initialStatus !== "function") fail("initialStatus: expected a function");
  if (typeof spec.reconcile !== "function") fail("reconcile: expected a function");
  const timeout = spec.timeoutMs;
  if (
    timeout !== undefined &&
    (!Number.isSafeInteger(timeout) || timeout < 1 || timeout > MAX_RECONCILE_TIMEOUT_MS)
  ) {
    fail(`timeoutMs: expected an integer from 1 to ${MAX_RECONCILE_TIMEOUT_MS}`);
  }
  if (spec.budget !== undefined) {
    const budget = v.safeParse(BudgetSchema, spec.budget);
    if (!budget.success) fail(`budget: ${describeIssues(budget.issues)}`);
  }
  const known = new Set(["name", "initialStatus", "reconcile", "timeoutMs", "budget"]);
  const extra = Object.keys(spec).find((key) => !known.has(key));
  if (extra !== undefined) fail(`${extra}: unknown field`);
  return Object.freeze({ ...spec, [CONTROLLER_BRAND]: true as const });
}

export function isControllerDefinition(value: unknown): value is ControllerDefinition {
  return typeof value === "object" && value !== null &&
    (value as Record<symbol, unknown>)[CONTROLLER_BRAND] === true;
}

/** The definition's reconcile deadline. */
export function reconcileTimeoutMs(def: ControllerDefinition): number {
  return def.timeoutMs ?? DEFAULT_RECONCILE_TIMEOUT_MS;
}
