/**
 * The three results a reconcile returns: `settled`, `requeue` and `requeueAfter(ms)`, each with
 * an optional status patch. The reconcile context carries them (`ctx.settled(...)`); 0.12
 * controller files may also import them from `@osolmaz/pi-workflows/controllers`.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { ReconcileContext, ReconcileResult, StatusPatch } from "./types.ts";

/** The longest `requeueAfter` (a year); a controller that needs more should settle. */
export const MAX_REQUEUE_AFTER_MS = 365 * 24 * 3600_000;

export function settled<TStatus = JsonValue>(
  patch?: StatusPatch<TStatus>,
): ReconcileResult<TStatus> {
  return { kind: "settled", ...(patch ? { patch } : {}) };
}

export function requeue<TStatus = JsonValue>(
  patch?: StatusPatch<TStatus>,
): ReconcileResult<TStatus> {
  return { kind: "requeue", ...(patch ? { patch } : {}) };
}

export function requeueAfter<TStatus = JsonValue>(
  ms: number,
  patch?: StatusPatch<TStatus>,
): ReconcileResult<TStatus> {
  if (!Number.isSafeInteger(ms) || ms < 1 || ms > MAX_REQUEUE_AFTER_MS) {
    throw new TypeError(
      `requeueAfter: expected a whole number of milliseconds from 1 to ${MAX_REQUEUE_AFTER_MS}`,
    );
  }
  return { kind: "requeue", afterMs: ms, ...(patch ? { patch } : {}) };
}

/** The result helpers as one object, the way the reconcile context holds them. */
export function createResultHelpers<TStatus = JsonValue>(): Pick<
  ReconcileContext<TStatus>,
  "settled" | "requeue" | "requeueAfter"
> {
  return { settled, requeue, requeueAfter };
}
