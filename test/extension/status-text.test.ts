/**
 * `/workflow status` names the `pi-workflows effect resolve` commands for a run blocked on an
 * ambiguous effect (a plain resume is refused, so they are the only way on), as the CLI's
 * `status` does, from the same text.
 */
import { describe, expect, it } from "vitest";
import { runStatusText } from "../../src/extension/workflow-actions.ts";
import { formatRun } from "../../src/cli/format-run.ts";
import type {
  AmbiguousEffectSummary,
  AttemptSummary,
  RunSummary,
} from "../../src/protocol/run-operations.ts";

const T0 = Date.UTC(2026, 0, 1);
const RUN_ID = "run-1a2b3c4d-0000-4000-8000-000000000001";

function run(over: Partial<RunSummary>): RunSummary {
  return {
    runId: RUN_ID,
    workflowName: "deploy",
    title: null,
    state: "running",
    queueState: "running",
    paused: false,
    revision: 3,
    executionMode: "interactive",
    createdAt: T0,
    updatedAt: T0,
    ...over,
  };
}

const attempts = [{
  attemptId: "att-7",
  nodeId: "ship",
  sequence: 1,
  nodeKind: "action",
  effect: "external",
  state: "interrupted",
  startedAt: T0,
  finishedAt: T0 + 500,
  deadlineAt: null,
} as AttemptSummary];
const ambiguous: AmbiguousEffectSummary[] = [
  { effectId: "eff-1", attemptId: "att-7", nodeId: "ship", managed: false },
];

describe("/workflow status of an ambiguous effect", () => {
  it("names the effect resolve commands for a run blocked on it, as the CLI's status does", () => {
    const blocked = run({ blockedReason: "effectAmbiguous" });
    const text = runStatusText({ run: blocked, attempts, ambiguousEffects: ambiguous }, T0);
    expect(text).toContain("node ship, attempt att-7, effect eff-1");
    for (const verdict of ["--applied '<output-json>'", "--not-applied", "--retry"]) {
      expect(text).toContain(`pi-workflows effect resolve ${RUN_ID} att-7 ${verdict}`);
    }
    // One copy of the text: the CLI's lines, with its short id.
    const cli = formatRun(blocked, attempts, { ambiguous, now: T0 });
    const lines = (s: string) => s.split("\n").filter((l) => l.startsWith("  pi-workflows effect"));
    expect(lines(text).map((l) => l.replace(RUN_ID, "run-1a2b3c4d"))).toEqual(lines(cli));
  });

  it("names the verdict commands for an ended run's ambiguous effects, without --retry", () => {
    const ended = run({ state: "cancelled", queueState: "cancelled" });
    const text = runStatusText({ run: ended, attempts, ambiguousEffects: ambiguous }, T0);
    expect(text).toContain(`pi-workflows effect resolve ${RUN_ID} att-7 --not-applied`);
    expect(text).not.toContain("--retry");
  });

  it("names a fork's parent and marks the steps it adopted", () => {
    const fork = run({
      state: "completed",
      queueState: "done",
      forkedFrom: { runId: "run-parent", nodeId: "check" },
    });
    const steps = [
      { ...attempts[0], nodeId: "draft", nodeKind: "agent", state: "ok", adoptedFrom: "att-1" },
      { ...attempts[0], attemptId: "att-9", nodeId: "check", sequence: 2, state: "ok" },
    ] as AttemptSummary[];
    const lines = runStatusText({ run: fork, attempts: steps }, T0 + 1_000).split("\n");
    expect(lines[1]).toBe("Forked from run-parent at check");
    expect(lines[2]).toMatch(/^✓ ● draft {2}\S+ {2}adopted$/);
    expect(lines[3]).not.toContain("adopted");
  });

  it("says how a run parked on a changed workflow file goes on", () => {
    const parked = run({ blockedReason: "workflowSourceChanged", queueState: "parked" });
    expect(runStatusText({ run: parked, attempts: [] }, T0)).toContain(
      `/workflow resume ${RUN_ID} --accept-source, or restore the file and /workflow resume`,
    );
  });

  it("offers --accept-source for a gone built-in only once its include is removed", () => {
    const parked = run({ blockedReason: "workflowSourceChanged", queueState: "parked" });
    const gone = { source: "builtin:old", reason: "unknownBuiltin" };
    const root = runStatusText({
      run: parked,
      attempts: [],
      sourceChanges: [{ ...gone, root: true }],
    }, T0);
    expect(root).toContain(`/workflow cancel ${RUN_ID}`);
    expect(root).not.toContain("--accept-source");
    const included = runStatusText({ run: parked, attempts: [], sourceChanges: [gone] }, T0);
    expect(included).toContain(`includes builtin:old`);
    expect(included).toContain(
      `remove the include, then /workflow resume ${RUN_ID} --accept-source`,
    );
  });
});

describe("/workflow status of what a run spent", () => {
  const used = (cost: number | null) => ({
    input: 1000,
    output: 300,
    cacheRead: 1400,
    cacheWrite: 100,
    cost,
    provider: "fake",
    model: "fake-model",
  });
  const step = (nodeId: string, sequence: number, cost: number | null): AttemptSummary => ({
    attemptId: `att-${sequence}`,
    nodeId,
    sequence,
    nodeKind: "agent",
    effect: "external",
    state: "ok",
    startedAt: T0,
    finishedAt: T0 + 2000,
    deadlineAt: null,
    usage: used(cost),
  });

  it("shows the run's spend of its budget and each model step's usage; no price: tokens only", () => {
    const text = runStatusText({
      run: run({
        blockedReason: "budgetExceeded",
        spend: { tokens: 5600, cost: 0.008295 },
        budget: { maxCostUsd: 0.005 },
      }),
      attempts: [step("plan", 1, 0.008295), step("write", 2, null)],
    }, T0 + 5000);
    expect(text).toContain("Spend: 5.6k tokens, $0.008295 of budget $0.005");
    expect(text).toMatch(/✓ ● plan {2}2s {2}2\.8k tokens, \$0\.008295\n/);
    expect(text).toMatch(/✓ ● write {2}2s {2}2\.8k tokens$/m);
  });
});
