/**
 * The worker's check before a spending step (src/worker/budget-check.ts): a run's own budget from
 * its facts; the host is asked (`budget.check`) only for a controller's child run, whose
 * controller total moves with the other children.
 */
import { describe, expect, it } from "vitest";
import type { RunFacts } from "../../src/protocol/run-facts.ts";
import { budgetStop } from "../../src/worker/budget-check.ts";
import type { Proposer } from "../../src/worker/proposer.ts";

function recordingProposer(stop: string | null) {
  const asked: unknown[] = [];
  const proposer = {
    propose: (kind: string, payload: unknown) => {
      asked.push({ kind, payload });
      return Promise.resolve({ result: stop === null ? {} : { stop } });
    },
  } as unknown as Proposer;
  return { proposer, asked };
}

const facts = (extra: Partial<RunFacts> = {}): RunFacts => ({
  runId: "run-1",
  workflowName: "w",
  projectPath: "/p",
  input: {},
  attempts: [],
  ...extra,
});

describe("the budget check before a spending step", () => {
  it("asks the host nothing for a run that is no controller's child", async () => {
    const { proposer, asked } = recordingProposer("would stop");
    expect(await budgetStop("agent", facts(), proposer)).toBeNull();
    expect(await budgetStop("agent", facts({ budget: { maxCostUsd: 1 } }), proposer)).toBeNull();
    expect(asked).toEqual([]);
  });

  it("asks the host for a controller's child, and stops on its answer", async () => {
    const { proposer, asked } = recordingProposer("controller c's child runs spent $2 of $1");
    expect(await budgetStop("agent", facts({ budgetPool: true }), proposer)).toBe(
      "controller c's child runs spent $2 of $1",
    );
    expect(await budgetStop("compute", facts({ budgetPool: true }), proposer)).toBeNull();
    expect(asked).toEqual([{ kind: "worker.progress", payload: { op: "budget.check" } }]);
    const free = recordingProposer(null);
    expect(await budgetStop("decision", facts({ budgetPool: true }), free.proposer)).toBeNull();
    expect(free.asked).toHaveLength(1);
  });
});
