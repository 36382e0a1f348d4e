/**
 * Managed effects (worker messages `effect.reserve` / `effect.settle`, protected writes): an
 * external side effect is reserved under a stable key before it runs and settled afterwards, so
 * a repeat after a crash adopts the stored receipt instead of applying twice, and an uncertain
 * one becomes `ambiguous` (see recovery) rather than being retried.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import {
  type Claim,
  claimRunId,
  protectedWrite,
  workerTarget,
  type WorkerWriteOptions,
} from "../claims.ts";
import { TransitionError } from "../errors.ts";
import { execute, queryOne, type StateStore } from "../store.ts";
import { decodeValue, encodeValue } from "../values.ts";
import { describeState, expectState } from "./common.ts";

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

/**
 * What the worker does next. `reserved` (`decision: "apply"`; the effect is `applying`): apply
 * it now under the key (a retry after a crash reuses the key, which the external system
 * deduplicates).
 * `applied`/`rejected` (`adopt`): use the stored outcome, do not apply again.
 * `cancelled`/`ambiguous` (`refuse`): never retried automatically.
 */
export type ReserveEffectResult =
  | { decision: "apply"; effectId: string; state: "reserved" }
  | {
    decision: "adopt";
    effectId: string;
    state: "applied" | "rejected";
    receipt: JsonValue | null;
  }
  | { decision: "refuse"; effectId: string; state: "ambiguous" | "cancelled" };

interface EffectRow {
  effect_id: string;
  run_id: string;
  attempt_id: string;
  request_fingerprint: string;
  state: string;
  receipt_json: string | null;
}

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
    const existing = queryOne<EffectRow>(
      store,
      "SELECT effect_id, run_id, attempt_id, request_fingerprint, state, receipt_json " +
        "FROM effects WHERE effect_key = :effectKey",
      { effectKey },
    );
    if (existing && existing.request_fingerprint !== opts.requestFingerprint) {
      throw new TransitionError(
        runId,
        "reserve an effect of",
        describeState(tx.run),
        `effect key ${opts.idempotencyKey} was already used with another request`,
      );
    }
    let result: ReserveEffectResult;
    if (existing?.state === "applied" || existing?.state === "rejected") {
      result = {
        decision: "adopt",
        effectId: existing.effect_id,
        state: existing.state,
        receipt: decodeValue(existing.receipt_json) ?? null,
      };
    } else if (existing?.state === "ambiguous" || existing?.state === "cancelled") {
      result = { decision: "refuse", effectId: existing.effect_id, state: existing.state };
    } else if (existing?.state === "applying" && existing.attempt_id === opts.attemptId) {
      // The same attempt asking again (a retried message): still reserved, nothing new.
      result = { decision: "apply", effectId: existing.effect_id, state: "reserved" };
    } else if (existing?.state === "applying") {
      // Another attempt left it applying and nobody released it: its outcome is unknown.
      execute(
        store,
        "UPDATE effects SET state = 'ambiguous', updated_at = :now WHERE effect_id = :effectId",
        { effectId: existing.effect_id, now: tx.now },
      );
      execute(
        store,
        "UPDATE effect_attempts SET state = 'ambiguous', finished_at = :now " +
          "WHERE effect_id = :effectId AND state = 'applying'",
        { effectId: existing.effect_id, now: tx.now },
      );
      result = { decision: "refuse", effectId: existing.effect_id, state: "ambiguous" };
    } else {
      // New, or still pending from an interrupted attempt: (re)reserve it for this attempt.
      const effectId = existing?.effect_id ?? store.ids.next("effect");
      if (existing) {
        execute(
          store,
          "UPDATE effect_attempts SET state = 'cancelled', finished_at = :now " +
            "WHERE effect_id = :effectId AND state = 'applying'",
          { effectId, now: tx.now },
        );
        execute(
          store,
          "UPDATE effects SET attempt_id = :attemptId, state = 'applying', updated_at = :now " +
            "WHERE effect_id = :effectId",
          { attemptId: opts.attemptId, effectId, now: tx.now },
        );
      } else {
        execute(
          store,
          "INSERT INTO effects (effect_id, run_id, attempt_id, effect_key, effect_type, " +
            "request_fingerprint, state, created_at, updated_at) VALUES (:effectId, :runId, " +
            ":attemptId, :effectKey, :effectType, :fingerprint, 'applying', :now, :now)",
          {
            effectId,
            runId,
            attemptId: opts.attemptId,
            effectKey,
            effectType: opts.effectType,
            fingerprint: opts.requestFingerprint,
            now: tx.now,
          },
        );
      }
      execute(
        store,
        "INSERT INTO effect_attempts (effect_id, attempt_no, generation, state, started_at) " +
          "VALUES (:effectId, (SELECT COALESCE(MAX(attempt_no), 0) + 1 FROM effect_attempts " +
          "WHERE effect_id = :effectId), :generation, 'applying', :now)",
        { effectId, generation: claim.generation, now: tx.now },
      );
      result = { decision: "apply", effectId, state: "reserved" };
    }
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
      const changed = execute(
        store,
        "UPDATE effects SET state = :outcome, receipt_json = :receipt, error_code = :errorCode, " +
          "updated_at = :now WHERE effect_id = :effectId AND run_id = :runId AND state = 'applying'",
        {
          outcome: opts.outcome,
          receipt,
          errorCode: opts.errorCode ?? null,
          now: tx.now,
          effectId: opts.effectId,
          runId,
        },
      );
      if (changed !== 1) {
        throw new TransitionError(
          runId,
          "settle an effect of",
          describeState(tx.run),
          `effect ${opts.effectId} is not applying in this run`,
        );
      }
      execute(
        store,
        "UPDATE effect_attempts SET state = :outcome, finished_at = :now WHERE effect_id = " +
          ":effectId AND state = 'applying'",
        { outcome: opts.outcome, now: tx.now, effectId: opts.effectId },
      );
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
