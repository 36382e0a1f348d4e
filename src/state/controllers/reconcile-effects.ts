/**
 * Managed effects of a reconcile (`ctx.effects.ensure`): the same records and rules as workflow
 * effects (transitions/effect-records.ts), owned by the resource instead of a run attempt. The
 * key is `controller:<uid>` + kind + the author's key, so a re-created resource (a new uid) never
 * adopts the effects of an earlier one.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { Claim } from "../claims.ts";
import { encodeValue } from "../values.ts";
import { type StateStore } from "../store.ts";
import { execute, queryOne } from "../statements.ts";
import {
  reserveEffectInTx,
  type ReserveEffectResult,
  settleEffectInTx,
} from "../transitions/effect-records.ts";
import { appendControllerEvent, type ResourceRow } from "./controller-records.ts";
import { ControllerRefusal, resourceLabel } from "./errors.ts";
import { type ReconcileTx, reconcileWrite } from "./reconcile-claims.ts";

export function controllerEffectKey(uid: string, kind: string, key: string): string {
  return [`controller:${uid}`, kind, key].join("\u0000");
}

export interface ReserveReconcileEffectOptions {
  uid: string;
  kind: string;
  key: string;
  requestFingerprint: string;
  /**
   * `readBack` (the code observes first), `idempotencyKey` (applying again under the key is safe)
   * or `nonResumable` (neither: an interrupted apply becomes ambiguous).
   */
  contract: "idempotencyKey" | "readBack" | "nonResumable";
}

export function reserveReconcileEffect(
  store: StateStore,
  claim: Claim,
  opts: ReserveReconcileEffectOptions,
): ReserveEffectResult {
  return reconcileWrite(store, claim, opts.uid, ({ now, row }) => {
    const result = reserveEffectInTx(store, {
      effectKey: controllerEffectKey(opts.uid, opts.kind, opts.key),
      effectType: opts.kind,
      requestFingerprint: opts.requestFingerprint,
      owner: { resourceUid: opts.uid },
      generation: claim.generation,
      contract: opts.contract,
      now,
      refuseOtherRequest: () =>
        new ControllerRefusal(
          "rejected",
          "effectKeyReused",
          `Effect key ${opts.key} of ${
            resourceLabel(row.name, row.resource_key)
          } was already used with another request: use a new key for a new effect`,
        ),
    });
    appendControllerEvent(store, opts.uid, row.resource_version, "effect.reserved", {
      effectId: result.effectId,
      kind: opts.kind,
      decision: result.decision,
    }, now);
    return result;
  });
}

export interface SettleReconcileEffectOptions {
  uid: string;
  effectId: string;
  outcome: "applied" | "rejected";
  receipt?: JsonValue;
  errorCode?: string;
}

export function settleReconcileEffect(
  store: StateStore,
  claim: Claim,
  opts: SettleReconcileEffectOptions,
): void {
  reconcileWrite(store, claim, opts.uid, (tx) => settleReconcileEffectInTx(store, tx, opts));
}

/** `settleReconcileEffect` inside the caller's reconcile write (a settle folded into the end). */
export function settleReconcileEffectInTx(
  store: StateStore,
  { now, row }: ReconcileTx,
  opts: SettleReconcileEffectOptions,
): void {
  const receipt = opts.receipt === undefined ? null : encodeValue("effect receipt", opts.receipt);
  const settled = settleEffectInTx(store, {
    effectId: opts.effectId,
    owner: { resourceUid: opts.uid },
    outcome: opts.outcome,
    receiptJson: receipt,
    errorCode: opts.errorCode ?? null,
    now,
  });
  if (!settled) {
    throw new ControllerRefusal(
      "rejected",
      "effectNotApplying",
      `Effect ${opts.effectId} is not applying for ${resourceLabel(row.name, row.resource_key)}`,
    );
  }
  appendControllerEvent(store, opts.uid, row.resource_version, "effect.settled", {
    effectId: opts.effectId,
    outcome: opts.outcome,
  }, now);
}

/**
 * The operator's reviewed verdict on an `ambiguous` effect of `resource` (spec "Effects and retry
 * safety": a separate reviewed recovery action): `applied` settles it with `receipt` (later
 * reconciles adopt it), `notApplied` makes it `pending` again, so the next `ensure` of its key
 * applies it. Refused unless the effect is the resource's and ambiguous.
 */
export function resolveAmbiguousEffectInTx(
  store: StateStore,
  resource: ResourceRow,
  verdict: { effectId: string; verdict: "applied" | "notApplied"; receipt?: JsonValue },
  now: number,
): { effectId: string; state: "applied" | "pending" } {
  const label = resourceLabel(resource.name, resource.resource_key);
  const effect = queryOne<{ state: string }>(
    store,
    "SELECT state FROM effects WHERE effect_id = :effectId AND resource_uid = :uid",
    { effectId: verdict.effectId, uid: resource.uid },
  );
  if (!effect) {
    throw new ControllerRefusal(
      "notFound",
      "effectNotFound",
      `${label} has no effect ${verdict.effectId} (see 'pi-workflows controller get')`,
    );
  }
  if (effect.state !== "ambiguous") {
    throw new ControllerRefusal(
      "conflict",
      "effectNotAmbiguous",
      `Effect ${verdict.effectId} of ${label} is ${effect.state}, not ambiguous: nothing to resolve`,
    );
  }
  const state = verdict.verdict === "applied" ? "applied" : "pending";
  const receipt = verdict.verdict === "applied"
    ? encodeValue("effect receipt", verdict.receipt ?? null)
    : null;
  execute(
    store,
    "UPDATE effects SET state = :state, receipt_json = :receipt, updated_at = :now " +
      "WHERE effect_id = :effectId",
    { state, receipt, now, effectId: verdict.effectId },
  );
  appendControllerEvent(store, resource.uid, resource.resource_version, "effect.resolved", {
    effectId: verdict.effectId,
    verdict: verdict.verdict,
  }, now);
  return { effectId: verdict.effectId, state };
}
