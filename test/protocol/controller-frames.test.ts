/**
 * The host's parse of controller worker frames (`parseControllerFrame`: JSON-typed fields are
 * not walked again) against the reference `parseControllerMessage`: on seeded generated and
 * mutated frames, made by JSON.parse as the host receives them, both give the same verdict and,
 * when valid, the same value; and it really is the cheaper one on a reconcile's end.
 */
import { describe, expect, test } from "vitest";
import {
  CONTROLLER_LAUNCH_SCHEMA,
  parseControllerFrame,
  parseControllerMessage,
} from "../../src/protocol/controller-worker.ts";
import { prng } from "../support/fuzz-frames.ts";
import { asReceived, jsonValue, mutateValue, pick, type Rand } from "../support/fuzz-values.ts";

const json = (r: Rand): unknown => jsonValue(r, ["n", "done", "k", ""]);

const condition = (r: Rand) => ({
  type: pick(r, ["Ready", "Synced"]),
  status: pick(r, [true, false, "unknown"]),
  reason: pick(r, ["Synced", "Waiting"]),
  ...(r() < 0.5 ? { message: "the file matches the spec" } : {}),
  observedGeneration: pick(r, [0, 1, 7]),
  lastTransitionTime: "2026-12-01T18:00:00.000Z",
});

function payloadFor(r: Rand, kind: string): Record<string, unknown> {
  switch (kind) {
    case "effect.reserve":
      return {
        kind: pick(r, ["bench.mark", "file.write"]),
        key: pick(r, ["mark-1", "k".repeat(1000)]),
        requestFingerprint: `sha256:${"ab".repeat(32)}`,
        contract: pick(r, ["idempotencyKey", "readBack", "nonResumable"]),
      };
    case "effect.settle":
      return {
        effectId: "effect_1",
        outcome: pick(r, ["applied", "rejected"]),
        ...(r() < 0.7 ? { receipt: json(r) } : {}),
        ...(r() < 0.3 ? { error: { code: "failed", message: "no" } } : {}),
      };
    case "workflow.ensure":
      return {
        requestKey: "child",
        workflow: "mirror",
        input: json(r),
        ...(r() < 0.3 ? { interactive: r() < 0.5 } : {}),
      };
    default: {
      const status = {
        observedGeneration: pick(r, [0, 1, 3]),
        conditions: Array.from({ length: Math.floor(r() * 3) }, () => condition(r)),
        controllerStatus: json(r),
      };
      const outcome = r() < 0.2
        ? { kind: "error", error: { code: "reconcileFailed", message: "boom" } }
        : {
          kind: pick(r, ["settled", "requeue"]),
          status,
          ...(r() < 0.3 ? { finalizers: ["keep"] } : {}),
          ...(r() < 0.3 ? { afterMs: pick(r, [1, 5000]) } : {}),
        };
      return {
        outcome,
        ...(r() < 0.5
          ? { settle: { effectId: "effect_1", outcome: "applied", receipt: json(r) } }
          : {}),
      };
    }
  }
}

const KINDS = ["effect.reserve", "effect.settle", "workflow.ensure", "reconcile.finished"];

function validFrame(r: Rand): Record<string, unknown> {
  const kind = pick(r, KINDS);
  return {
    schema: CONTROLLER_LAUNCH_SCHEMA,
    kind,
    messageId: "cwep_1.7",
    workerEpoch: "cwep_1",
    reconcileId: "res_1:2",
    payload: payloadFor(r, kind),
  };
}

const mutate = (r: Rand, value: unknown): unknown =>
  mutateValue(r, value, {
    leaves: [null, undefined, 0, -1, 1.5, "", "x", true, [], {}, "2026-13-01"],
    added: ["extra", "kind", "status", "receipt"],
    keys: ["n", "done", "k", ""],
  });

describe("controller frames", () => {
  test("the frame parse agrees with the reference on generated and mutated frames", () => {
    const r = prng(17);
    let valid = 0;
    let invalid = 0;
    for (let i = 0; i < 3000; i++) {
      let frame: unknown = validFrame(r);
      for (let m = Math.floor(r() * 3); m > 0; m--) frame = mutate(r, frame);
      const received = asReceived(frame);
      const reference = parseControllerMessage(received);
      const fast = parseControllerFrame(received);
      expect({ i, ok: fast.ok }).toEqual({ i, ok: reference.ok });
      if (reference.ok && fast.ok) {
        expect(fast.value).toEqual(reference.value);
        valid++;
      } else invalid++;
    }
    // Both sides were really exercised.
    expect(valid).toBeGreaterThan(500);
    expect(invalid).toBeGreaterThan(500);
  });

  test("it does not walk a reconcile result's JSON again", () => {
    // A status whose every look inside is counted: the reference walks it node by node, the
    // frame parse only checks that it is there.
    let looks = 0;
    const controllerStatus = new Proxy({ n: 1, items: [1, 2, 3] }, {
      get: (target, key, receiver) => {
        looks++;
        return Reflect.get(target, key, receiver);
      },
      ownKeys: (target) => {
        looks++;
        return Reflect.ownKeys(target);
      },
    });
    const frame = (status: unknown) => ({
      schema: CONTROLLER_LAUNCH_SCHEMA,
      kind: "reconcile.finished",
      messageId: "cwep_1.9",
      workerEpoch: "cwep_1",
      reconcileId: "res_1:2",
      payload: {
        outcome: {
          kind: "settled",
          status: { observedGeneration: 1, conditions: [], controllerStatus: status },
        },
      },
    });
    expect(parseControllerFrame(frame(controllerStatus)).ok).toBe(true);
    expect(looks).toBe(0);
    expect(parseControllerMessage(frame(controllerStatus)).ok).toBe(true);
    expect(looks).toBeGreaterThan(0);
  });
});
