/**
 * Managed effects (worker messages `effect.reserve` / `effect.settle`, protected writes): an
 * external side effect is reserved under a stable key before it runs and settled afterwards, so
 * a repeat after a crash adopts the stored receipt instead of applying twice, and an uncertain
 * one becomes `ambiguous` (see recovery) rather than being retried.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { type Claim, claimRunId } from "../claims.ts";
import { protectedWrite, workerTarget, type WorkerWriteOptions } from "../protected-write.ts";
import { TransitionError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { queryOne } from "../statements.ts";
import { encodeValue } from "../values.ts";
import { describeState, expectState } from "./common.ts";
import { reserveEffectInTx, type ReserveEffectResult, settleEffectInTx } from "./effect-records.ts";

export interface ReserveEffectOptions extends WorkerWriteOptions {
  /** The running attempt that performs the effect. */
  attemptId: string;
  /** Effect type, e.g. `shell`, `http.post`. */
  effectType: string;
  /** The author's idempotency key for this effect. */
  idempotencyKey: string;
  /** `fingerprint()` of the effect request; the same key with another request is refused. */
  requestFingerprint: string;
  /** Source resource of the key; defaults to `run:<runId>`. */
  resource?: string;
}

export type { ReserveEffectResult };

/**
 * Reserves (or finds) the effect for `(resource, type, key)`: a new or `pending` one (left by an
 * interrupted attempt) becomes `applying` under this attempt with a new `effect_attempts` row;
 * event `effect.reserved`.
 */
export function reserveEffect(
  store: StateStore,
  claim: Claim,
  opts: ReserveEffectOptions,
): { revision: number; result: ReserveEffectResult } {
  const runId = claimRunId(claim);
  const effectKey = [opts.resource ?? `run:${runId}`, opts.effectType, opts.idempotencyKey].join(
    "\u0000",
  );
  return protectedWrite(store, claim, workerTarget(runId, opts), (tx) => {
    expectState(
      tx.run,
      "reserve an effect of",
      (r) => r.state === "running" && r.queue_state === "running",
    );
    const attempt = queryOne<{ run_id: string; state: string; effect: string }>(
      store,
      "SELECT run_id, state, effect FROM node_attempts WHERE attempt_id = :attemptId",
      { attemptId: opts.attemptId },
    );
    if (attempt?.run_id !== runId || attempt.state !== "running" || attempt.effect !== "external") {
      throw new TransitionError(
        runId,
        "reserve an effect of",
        describeState(tx.run),
        `attempt ${opts.attemptId} is not a running external attempt of this run`,
      );
    }
    const result = reserveEffectInTx(store, {
      effectKey,
      effectType: opts.effectType,
      requestFingerprint: opts.requestFingerprint,
      owner: { runId, attemptId: opts.attemptId },
      generation: claim.generation,
      now: tx.now,
      refuseOtherRequest: () =>
        new TransitionError(
          runId,
          "reserve an effect of",
          describeState(tx.run),
          `effect key ${opts.idempotencyKey} was already used with another request`,
        ),
    });
    return {
      type: "effect.reserved",
      payload: { effectId: result.effectId, decision: result.decision },
      summary: { state: "running", effect: result.decision },
      result,
    };
  });
}

export interface SettleEffectOptions extends WorkerWriteOptions {
  effectId: string;
  outcome: "applied" | "rejected";
  /** Small external receipt (ids, status), adopted by any later repeat. */
  effectReceipt?: JsonValue;
  errorCode?: string;
}

/** Settles an `applying` effect of this run as applied or rejected; event `effect.settled`. */
export function settleEffect(
  store: StateStore,
  claim: Claim,
  opts: SettleEffectOptions,
): { revision: number } {
  const runId = claimRunId(claim);
  const receipt = opts.effectReceipt === undefined
    ? null
    : encodeValue("effect receipt", opts.effectReceipt);
  const { revision } = protectedWrite(
    store,
    claim,
    workerTarget(runId, opts),
    (tx) => {
      expectState(
        tx.run,
        "settle an effect of",
        (r) => r.state === "running" && r.queue_state === "running",
      );
      const settled = settleEffectInTx(store, {
        effectId: opts.effectId,
        owner: { runId, attemptId: "" },
        outcome: opts.outcome,
        receiptJson: receipt,
        errorCode: opts.errorCode ?? null,
        now: tx.now,
      });
      if (!settled) {
        throw new TransitionError(
          runId,
          "settle an effect of",
          describeState(tx.run),
          `effect ${opts.effectId} is not applying in this run`,
        );
      }
      return {
        type: "effect.settled",
        payload: { effectId: opts.effectId, outcome: opts.outcome },
        summary: { state: "running", effect: opts.outcome },
        result: undefined,
      };
    },
  );
  return { revision };
}
