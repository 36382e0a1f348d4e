import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { listAttempts, readRun, readRunStatus } from "../../src/state/queries.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import { completeRun } from "../../src/state/transitions/run-end.ts";
import { enqueue, type Fixture, launch, openFixture } from "../support/state-store.ts";

describe("readRunStatus", () => {
  let f: Fixture;
  beforeEach(() => {
    f = openFixture();
  });
  afterEach(() => f.close());

  const same = (runId: string) =>
    expect(readRunStatus(f.store, runId)).toMatchObject({
      run: readRun(f.store, runId),
      attempts: listAttempts(f.store, runId),
      attemptCount: listAttempts(f.store, runId).length,
    });

  it("equals readRun plus listAttempts at every step of a run, output included", () => {
    expect(readRunStatus(f.store, "missing")).toBeUndefined();
    const runId = enqueue(f.store);
    enqueue(f.store); // another run's rows must not leak in
    same(runId);
    const claim = launch(f.store, runId);
    same(runId);
    for (let i = 1; i <= 3; i++) {
      f.clock.advance(5);
      recordNodeStarted(f.store, claim, {
        attemptId: `a${i}`,
        nodeId: `n${i}`,
        nodeKind: "compute",
        effect: i === 2 ? "external" : "pure",
        deadlineAt: i === 3 ? f.clock.now() + 1000 : null,
      });
      same(runId);
      if (i === 2) {
        recordNodeFailed(f.store, claim, {
          attemptId: "a2",
          outcome: "failed",
          error: { code: "boom", message: "It broke" },
        });
      } else {
        recordNodeFinished(f.store, claim, { attemptId: `a${i}`, output: { i } });
      }
    }
    completeRun(f.store, claim, { output: { final: "x".repeat(5000) } });
    const status = readRunStatus(f.store, runId)!;
    expect(status.attempts.map((a) => [a.sequence, a.state])).toEqual([
      [1, "ok"],
      [2, "failed"],
      [3, "ok"],
    ]);
    expect(status.run.output).toEqual({ final: "x".repeat(5000) });
    same(runId);
  });
});
