/**
 * Running an action or shell node under a managed effect: reserve it with the host first (a
 * reservation that already applied hands back its receipt, which becomes the output without
 * running anything), optionally read back whether it applied, run, then settle. An aborted
 * attempt is left unsettled: the host decides whether it is ambiguous.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { fingerprint } from "../protocol/canonical-json.ts";
import { errorMessage, NodeFailure } from "./errors.ts";
import { toJson } from "./json-value.ts";
import type { ManagedEffect, NodeContext } from "./types.ts";

export type EffectReservation =
  | { effectId: string; state: "reserved" }
  | { effectId: string; state: "applied"; receipt: JsonValue }
  | {
    effectId: string;
    state: "rejected" | "cancelled" | "ambiguous";
    error?: { code: string; message: string };
  };

/** The worker's side of `effect.reserve` / `effect.settle`. */
export interface EffectPort {
  reserve(request: {
    effectType: string;
    idempotencyKey: string;
    requestFingerprint: string;
    contract: "idempotencyKey" | "readBack";
  }): Promise<EffectReservation>;
  settle(request: {
    effectId: string;
    outcome: "applied" | "rejected";
    receipt?: JsonValue;
    error?: { code: string; message: string };
  }): Promise<void>;
}

export async function runManagedEffect(
  effect: ManagedEffect,
  defaultType: string,
  ctx: NodeContext,
  port: EffectPort,
  request: JsonValue,
  apply: () => Promise<JsonValue>,
): Promise<JsonValue> {
  let key: unknown;
  try {
    key = await effect.key(ctx);
  } catch (error) {
    throw new NodeFailure("effectKeyFailed", `Effect key callback failed: ${errorMessage(error)}`);
  }
  if (typeof key !== "string" || key.length === 0 || key.length > 1000) {
    throw new NodeFailure("effectKeyFailed", "Effect key must be a string of 1-1000 characters");
  }
  const effectType = effect.type ?? defaultType;
  const contract = effect.observe ? "readBack" : "idempotencyKey";
  const reservation = await port.reserve({
    effectType,
    idempotencyKey: key,
    requestFingerprint: fingerprint({ effectType, key, request }),
    contract,
  });
  if (reservation.state === "applied") return reservation.receipt;
  if (reservation.state !== "reserved") {
    throw new NodeFailure(
      reservation.state === "ambiguous" ? "effectAmbiguous" : "effectRejected",
      reservation.error?.message ??
        `Effect "${effectType}" with this key is already ${reservation.state}`,
    );
  }
  if (effect.observe) {
    const observed = await effect.observe(ctx);
    if (observed !== null && observed !== undefined) {
      const receipt = toJson(observed, "observed effect receipt");
      await port.settle({ effectId: reservation.effectId, outcome: "applied", receipt });
      return receipt;
    }
  }
  let output: JsonValue;
  try {
    output = await apply();
  } catch (error) {
    if (!ctx.signal.aborted) {
      const e = error instanceof NodeFailure
        ? { code: error.code, message: error.message }
        : { code: "nodeFailed", message: errorMessage(error) };
      await port.settle({ effectId: reservation.effectId, outcome: "rejected", error: e });
    }
    throw error;
  }
  await port.settle({ effectId: reservation.effectId, outcome: "applied", receipt: output });
  return output;
}
