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
import { asReceived, jsonValue, mutateValue, pick, type Rand } from "../support/fuzz-values.ts";

const json = (r: Rand): unknown => jsonValue(r, ["ok", "n", "", "text"]);

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
    ...(r() < 0.8 ? { projectPath: "/tmp/project" } : {}),
    input: json(r),
    attempts: Array.from({ length: Math.floor(r() * 5) }, (_, i) => attempt(r, i + 1)),
    ...(r() < 0.2 ? { approvedRetry: { attemptId: "att-1" } } : {}),
    ...(r() < 0.2 ? { budget: { maxCostUsd: 1.5 } } : {}),
    ...(r() < 0.2 ? { budgetPool: true } : {}),
  };
}

const mutate = (r: Rand, value: unknown): unknown =>
  mutateValue(r, value, {
    leaves: [null, undefined, 0, -1, 1.5, "", "x", true, [], {}, "pure"],
    added: ["extra", "output", "input", "state"],
    keys: ["ok", "n", "", "text"],
  });

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
