/**
 * The managed-effect record rules, shared by workflow attempts (transitions/effects.ts) and
 * controller reconciles (controllers/reconcile-effects.ts): reserve an effect under its key
 * (adopt a settled one, refuse an ambiguous or cancelled one, make a forgotten applying one
 * ambiguous), and settle an applying one. Both run inside the caller's protected write.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import { decodeValue } from "../values.ts";

/**
 * What the worker does next. `apply` (the effect is now `applying`): apply it under the key (a
 * retry after a crash reuses the key, which the external system deduplicates, or reads back
 * first). `adopt`: use the stored outcome, do not apply again. `refuse`: never retried
 * automatically.
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

/** Who owns the effect: a run attempt, or a controller resource. */
export type EffectOwner =
  | { runId: string; attemptId: string }
  | { resourceUid: string };

export interface ReserveEffectInput {
  /** Source resource, effect type and author key joined: unique across all effects. */
  effectKey: string;
  effectType: string;
  requestFingerprint: string;
  owner: EffectOwner;
  /** The claim generation doing the reservation (recorded on the effect attempt). */
  generation: number;
  /** How a retry after an uncertain stop stays safe (default `idempotencyKey`). */
  contract?: "idempotencyKey" | "readBack" | "nonResumable";
  now: number;
  /** The error for a key reused with another request. */
  refuseOtherRequest: () => Error;
}

interface EffectRow {
  effect_id: string;
  attempt_id: string | null;
  request_fingerprint: string;
  state: string;
  receipt_json: string | null;
  current_generation: number | null;
}

export function reserveEffectInTx(
  store: StateStore,
  input: ReserveEffectInput,
): ReserveEffectResult {
  const { now, owner } = input;
  const existing = queryOne<EffectRow>(
    store,
    "SELECT e.effect_id, e.attempt_id, e.request_fingerprint, e.state, e.receipt_json, " +
      "(SELECT a.generation FROM effect_attempts a WHERE a.effect_id = e.effect_id AND " +
      "a.state = 'applying') AS current_generation FROM effects e WHERE e.effect_key = :effectKey",
    { effectKey: input.effectKey },
  );
  if (existing && existing.request_fingerprint !== input.requestFingerprint) {
    throw input.refuseOtherRequest();
  }
  if (existing?.state === "applied" || existing?.state === "rejected") {
    return {
      decision: "adopt",
      effectId: existing.effect_id,
      state: existing.state,
      receipt: decodeValue(existing.receipt_json) ?? null,
    };
  }
  if (existing?.state === "ambiguous" || existing?.state === "cancelled") {
    return { decision: "refuse", effectId: existing.effect_id, state: existing.state };
  }
  if (existing?.state === "applying") {
    const same = "attemptId" in owner
      ? existing.attempt_id === owner.attemptId
      : existing.current_generation === input.generation;
    // The same owner asking again (a retried message): still reserved, nothing new.
    if (same) return { decision: "apply", effectId: existing.effect_id, state: "reserved" };
    // Another owner left it applying and nobody released it: its outcome is unknown.
    execute(
      store,
      "UPDATE effects SET state = 'ambiguous', updated_at = :now WHERE effect_id = :effectId",
      { effectId: existing.effect_id, now },
    );
    execute(
      store,
      "UPDATE effect_attempts SET state = 'ambiguous', finished_at = :now " +
        "WHERE effect_id = :effectId AND state = 'applying'",
      { effectId: existing.effect_id, now },
    );
    return { decision: "refuse", effectId: existing.effect_id, state: "ambiguous" };
  }
  // New, or still pending from an interrupted owner: (re)reserve it for this one.
  const effectId = existing?.effect_id ?? store.ids.next("effect");
  const runId = "runId" in owner ? owner.runId : null;
  const attemptId = "attemptId" in owner ? owner.attemptId : null;
  if (existing) {
    execute(
      store,
      "UPDATE effect_attempts SET state = 'cancelled', finished_at = :now " +
        "WHERE effect_id = :effectId AND state = 'applying'",
      { effectId, now },
    );
    execute(
      store,
      "UPDATE effects SET attempt_id = :attemptId, state = 'applying', updated_at = :now " +
        "WHERE effect_id = :effectId",
      { attemptId, effectId, now },
    );
  } else {
    execute(
      store,
      "INSERT INTO effects (effect_id, run_id, attempt_id, resource_uid, effect_key, " +
        "effect_type, request_fingerprint, contract, state, created_at, updated_at) VALUES " +
        "(:effectId, :runId, :attemptId, :resourceUid, :effectKey, :effectType, :fingerprint, " +
        ":contract, 'applying', :now, :now)",
      {
        effectId,
        runId,
        attemptId,
        resourceUid: "resourceUid" in owner ? owner.resourceUid : null,
        effectKey: input.effectKey,
        effectType: input.effectType,
        fingerprint: input.requestFingerprint,
        contract: input.contract ?? "idempotencyKey",
        now,
      },
    );
  }
  execute(
    store,
    "INSERT INTO effect_attempts (effect_id, attempt_no, generation, state, started_at) " +
      "VALUES (:effectId, (SELECT COALESCE(MAX(attempt_no), 0) + 1 FROM effect_attempts " +
      "WHERE effect_id = :effectId), :generation, 'applying', :now)",
    { effectId, generation: input.generation, now },
  );
  return { decision: "apply", effectId, state: "reserved" };
}

export interface SettleEffectInput {
  effectId: string;
  owner: EffectOwner;
  outcome: "applied" | "rejected";
  /** Canonical JSON of the external receipt, or null. */
  receiptJson: string | null;
  errorCode: string | null;
  now: number;
}

/** Settles an `applying` effect of `owner`; returns false when it is not applying there. */
export function settleEffectInTx(store: StateStore, input: SettleEffectInput): boolean {
  const ownerClause = "runId" in input.owner ? "run_id = :ownerId" : "resource_uid = :ownerId";
  const changed = execute(
    store,
    "UPDATE effects SET state = :outcome, receipt_json = :receipt, error_code = :errorCode, " +
      `updated_at = :now WHERE effect_id = :effectId AND ${ownerClause} AND state = 'applying'`,
    {
      outcome: input.outcome,
      receipt: input.receiptJson,
      errorCode: input.errorCode,
      now: input.now,
      effectId: input.effectId,
      ownerId: "runId" in input.owner ? input.owner.runId : input.owner.resourceUid,
    },
  );
  if (changed !== 1) return false;
  execute(
    store,
    "UPDATE effect_attempts SET state = :outcome, finished_at = :now WHERE effect_id = " +
      ":effectId AND state = 'applying'",
    { outcome: input.outcome, now: input.now, effectId: input.effectId },
  );
  return true;
}
