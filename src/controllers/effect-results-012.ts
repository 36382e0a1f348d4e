/**
 * 0.12's effect protocol inside `ctx.effects.ensure`: its `observe` said
 * `{state: "applied" | "not_applied" | "indeterminate"}` and its `apply` returned
 * `{state: "applied" | "rejected" | "indeterminate"}` (with `externalRef` or `error`), where this
 * version's `observe` returns a receipt or null and `apply` returns a receipt or throws. An
 * object of exactly one of those shapes is read with its 0.12 meaning, so a 0.12 controller's
 * "not applied" is never taken for a receipt.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";

export type Legacy012Result =
  | { state: "applied"; externalRef?: string }
  | { state: "not_applied" }
  | { state: "rejected" | "indeterminate"; error?: string };

const STATES = new Set(["applied", "not_applied", "rejected", "indeterminate"]);

/** The 0.12 result `value` is, or null when it is an ordinary receipt. */
export function legacy012Result(value: unknown): Legacy012Result | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  if (typeof record.state !== "string" || !STATES.has(record.state)) return null;
  for (const [field, v] of Object.entries(record)) {
    if (field === "state") continue;
    if ((field !== "externalRef" && field !== "error") || typeof v !== "string") return null;
  }
  return record as Legacy012Result;
}

/** `externalRef` of an applied 0.12 result's receipt, as 0.12's effect record carried it. */
export function externalRefOf(receipt: JsonValue | null): string | undefined {
  const ref = (receipt as { externalRef?: unknown } | null)?.externalRef;
  return typeof ref === "string" ? ref : undefined;
}
