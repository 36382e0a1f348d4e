/**
 * Managed effects from the worker's side: `effect.reserve` before an action or shell node applies
 * its side effect, `effect.settle` after. The host owns the effect record; the worker only learns
 * whether to apply, adopt a stored receipt, or stop.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { EffectPort, EffectReservation } from "../workflows/engine.ts";
import type { Proposer } from "./proposer.ts";

export function createEffectPort(proposer: Proposer, runId: string, attemptId: string): EffectPort {
  return {
    async reserve(request) {
      const verdict = await proposer.propose("effect.reserve", {
        // The key's source resource: effects are deduplicated within the run.
        resource: `run:${runId}`,
        effectType: request.effectType,
        idempotencyKey: request.idempotencyKey,
        requestFingerprint: request.requestFingerprint,
        contract: request.contract,
      }, attemptId);
      return toReservation(verdict.result);
    },
    async settle(request) {
      await proposer.propose("effect.settle", {
        effectId: request.effectId,
        outcome: request.outcome,
        receipt: request.receipt,
        error: request.error,
      }, attemptId);
    },
  };
}

function toReservation(result: JsonValue | undefined): EffectReservation {
  const r = (result ?? {}) as Record<string, JsonValue>;
  const effectId = typeof r.effectId === "string" ? r.effectId : "";
  switch (r.state) {
    case "reserved":
      return { effectId, state: "reserved" };
    case "applied":
      return { effectId, state: "applied", receipt: r.receipt ?? null };
    case "rejected":
    case "cancelled":
    case "ambiguous":
      return {
        effectId,
        state: r.state,
        error: {
          code: r.state === "ambiguous" ? "effectAmbiguous" : "effectRejected",
          message: `The effect with this key is already ${r.state}`,
        },
      };
    default:
      throw new Error("Worker channel failed: effect.reserve reply carried no reservation");
  }
}
