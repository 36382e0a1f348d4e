/**
 * The worker's parse of run facts it decoded (`DecodedRunFactsSchema`: the input and outputs are
 * not walked again as JSON) against the reference `RunFactsSchema`: on seeded generated and
 * mutated facts, made by JSON.parse as the worker receives them, both give the same verdict and,
 * when valid, the same value; and the decoded parse really does not look inside an output.
 */
import * as v from "valibot";
import { describe, expect, test } from "vitest";
import { DecodedRunFactsSchema, RunFactsSchema } from "../../src/protocol/run-facts.ts";
import { prng } from "../support/fuzz-frames.ts";

type Rand = () => number;
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** Any JSON value, nested a little; keys never `__proto__` (the one documented difference). */
function json(r: Rand, depth = 0): unknown {
  const k = Math.floor(r() * (depth > 2 ? 4 : 6));
  if (k === 0) return null;
  if (k === 1) return r() < 0.5;
  if (k === 2) return pick(r, [0, -1, 1.5, 2 ** 53, 1e300]);
  if (k === 3) return pick(r, ["", "a", "é😀", "x".repeat(300)]);
  if (k === 4) return Array.from({ length: Math.floor(r() * 3) }, () => json(r, depth + 1));
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 3); i > 0; i--) {
    o[pick(r, ["ok", "n", "", "text"])] = json(r, depth);
  }
  return o;
}

function attempt(r: Rand, sequence: number): Record<string, unknown> {
  const state = pick(r, ["ok", "failed", "waiting", "running", "interrupted"]);
  return {
    attemptId: `att-${sequence}`,
    nodeId: pick(r, ["s1", "mount/child"]),
    sequence,
    nodeKind: pick(r, ["agent", "compute", "action"]),
    effect: pick(r, ["pure", "external"]),
    state,
    ...(state === "ok" ? { output: json(r) } : {}),
    ...(state === "failed" ? { error: { code: "nodeFailed", message: "boom" } } : {}),
    startedAt: 1_796_000_000_000 + sequence,
    ...(state === "ok" || state === "failed" ? { finishedAt: 1_796_000_000_500 } : {}),
    deadlineAt: r() < 0.5 ? null : 1_796_000_900_000,
    ...(r() < 0.4
      ? {
        usage: {
          input: 120,
          output: 30,
          cacheRead: 0,
          cacheWrite: 0,
          cost: 0.001,
          provider: "fake",
          model: "fake-1",
        },
      }
      : {}),
  };
}

function validFacts(r: Rand): Record<string, unknown> {
  return {
    runId: "run-1",
    workflowName: "chain",
    ...(r() < 0.8 ? { projectPath: "/work/project" } : {}),
    input: json(r),
    attempts: Array.from({ length: Math.floor(r() * 5) }, (_, i) => attempt(r, i + 1)),
    ...(r() < 0.2 ? { approvedRetry: { attemptId: "att-1" } } : {}),
    ...(r() < 0.2 ? { budget: { maxCostUsd: 1.5 } } : {}),
    ...(r() < 0.2 ? { budgetPool: true } : {}),
  };
}

/** One random change somewhere: a key dropped or added, a value replaced. */
function mutate(r: Rand, value: unknown): unknown {
  if (typeof value !== "object" || value === null) {
    return pick(r, [null, undefined, 0, -1, 1.5, "", "x", true, [], {}, "pure"]);
  }
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value)
    ? [...value]
    : { ...value as Record<string, unknown> };
  const keys = Object.keys(copy);
  const action = Math.floor(r() * 4);
  if (action === 0 && keys.length > 0) {
    delete (copy as Record<string, unknown>)[pick(r, keys)];
  } else if (action === 1) {
    (copy as Record<string, unknown>)[pick(r, ["extra", "output", "input", "state"])] = json(r);
  } else if (keys.length > 0) {
    const key = pick(r, keys);
    const inner = (copy as Record<string, unknown>)[key];
    (copy as Record<string, unknown>)[key] = action === 2 ? mutate(r, inner) : json(r);
  }
  return copy;
}

const asReceived = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? "null");

describe("decoded run facts", () => {
  test("the decoded parse agrees with the reference on generated and mutated facts", () => {
    const r = prng(37);
    let valid = 0;
    let invalid = 0;
    for (let i = 0; i < 3000; i++) {
      let facts: unknown = validFacts(r);
      for (let m = Math.floor(r() * 3); m > 0; m--) facts = mutate(r, facts);
      const received = asReceived(facts);
      const reference = v.safeParse(RunFactsSchema, received);
      const decoded = v.safeParse(DecodedRunFactsSchema, received);
      expect({ i, ok: decoded.success }).toEqual({ i, ok: reference.success });
      if (reference.success && decoded.success) {
        expect(decoded.output).toEqual(reference.output);
        valid++;
      } else invalid++;
    }
    // Both sides were really exercised.
    expect(valid).toBeGreaterThan(500);
    expect(invalid).toBeGreaterThan(500);
  });

  test("it does not walk an attempt's output or the input again", () => {
    let looks = 0;
    const counted = () =>
      new Proxy({ ok: true, items: [1, 2, 3] }, {
        get: (target, key, receiver) => {
          looks++;
          return Reflect.get(target, key, receiver);
        },
        ownKeys: (target) => {
          looks++;
          return Reflect.ownKeys(target);
        },
      });
    const facts = () => ({
      runId: "run-1",
      workflowName: "chain",
      input: counted(),
      attempts: [{
        attemptId: "att-1",
        nodeId: "s1",
        sequence: 1,
        nodeKind: "agent",
        effect: "external",
        state: "ok",
        output: counted(),
        startedAt: 1,
        finishedAt: 2,
        deadlineAt: null,
      }],
    });
    expect(v.safeParse(DecodedRunFactsSchema, facts()).success).toBe(true);
    expect(looks).toBe(0);
    expect(v.safeParse(RunFactsSchema, facts()).success).toBe(true);
    expect(looks).toBeGreaterThan(0);
  });
});
