/**
 * Managed effects across worker crashes: the action reserves its effect under an idempotency
 * key through the host, applies it, and settles it. A worker killed at each step must neither
 * lose the effect nor apply it again once it is known to have applied.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { queryAll } from "../../src/state/statements.ts";
import { createHarness, type Harness, isTerminal } from "../support/supervision.ts";

const WORKFLOW = `
import { appendFileSync } from "node:fs";
import { action, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "charge",
  startAt: "prepare",
  nodes: {
    prepare: compute({ run: () => ({ amount: 5 }) }),
    charge: action({
      effect: { type: "payment", key: () => "order-1" },
      run: ({ input, outputs }) => {
        appendFileSync(input.applies, "apply\\n");
        return { charged: outputs.prepare.amount };
      },
    }),
  },
  edges: [{ from: "prepare", to: "charge" }],
});
`;

/** Crash point -> how many times the external side effect is applied in the end. */
const CASES: [string, number][] = [
  ["worker.effect.reserve.afterReply#1", 1], // reserved, never applied: applied once on retry
  ["worker.effect.settle.afterReply#1", 1], // applied and settled: the retry adopts the receipt
  ["worker.effect.settle.beforeSend#1", 2], // applied, not settled: re-applied under the same key
  ["worker.node.finished.beforeSend#2", 1], // settled, node outcome lost: adopted
];

let h: Harness;
const runs: {
  runId: string;
  point: string;
  applies: string;
  marker: string;
  expected: number;
}[] = [];

beforeAll(async () => {
  const env = new Map<string, NodeJS.ProcessEnv>();
  h = await createHarness({}, { childEnv: (runId) => (runId ? env.get(runId) ?? {} : {}) });
  const path = h.writeWorkflow("charge.workflow.ts", WORKFLOW);
  const base = await h.supervision.resolve({
    workflow: path,
    input: { applies: "/" },
    cwd: h.projectDir,
  });
  if (!base.ok) throw new Error(base.message);
  for (const [i, [point, expected]] of CASES.entries()) {
    const input = { applies: join(h.root, `applies-${i}.log`) };
    const runId = h.enqueueResolved({ ...base, input, inputHash: fingerprint(input) });
    const marker = join(h.root, `crashed-${i}`);
    env.set(runId, { PI_WORKFLOWS_CRASH_AT: point, PI_WORKFLOWS_CRASH_ONCE: marker });
    runs.push({ runId, point, applies: input.applies, marker, expected });
  }
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe("managed effects across worker crashes", () => {
  it("each run completes; the effect applies only as its contract allows", async () => {
    for (const r of runs) {
      const run = await h.waitForRun(r.runId, isTerminal);
      expect([run.state, run.output], r.point).toEqual(["completed", { charged: 5 }]);
      expect(existsSync(r.marker), `${r.point} was reached`).toBe(true);
      const applied = readFileSync(r.applies, "utf8").split("\n").filter(Boolean).length;
      expect(applied, r.point).toBe(r.expected);
      const effects = queryAll<{ state: string }>(
        h.store,
        "SELECT state FROM effects WHERE run_id = :runId",
        { runId: r.runId },
      ).map((e) => e.state);
      expect(effects, r.point).toEqual(["applied"]);
    }
    expect(h.invariants()).toEqual([]);
  });
});
