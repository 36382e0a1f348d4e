/**
 * The viewer's bounded-read gate, counted statement by statement: after the first window an
 * unchanged idle tick runs one statement that reads one row and no payload; a change reads only
 * the small rows of the runs it names; a finished step's output is read once.
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStateStore, type ReadStats, type StateStore } from "../../src/state/store.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
  recordNodeUpdate,
} from "../../src/state/transitions/node-attempts.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import {
  attemptDetail,
  createViewerData,
  refreshViewerData,
  watchRun,
} from "../../src/viewer/viewer-data.ts";
import { enqueue, type Fixture, HOST_EPOCH, launch, openFixture } from "../support/state-store.ts";
import { endedRun } from "../support/ended-runs.ts";
import { DAY_MS, runRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";

let fx: Fixture | undefined;
let ro: StateStore | undefined;
afterEach(() => {
  if (ro) closeStateStore(ro);
  fx?.close();
  fx = ro = undefined;
});

const BIG = { text: "x".repeat(200_000) };

/** The viewer's own connection to the fixture's database (read-only). */
function openViewerStore(fx: Fixture): StateStore {
  return openStateStore({
    stateDir: join(fx.dir, "state"),
    clock: new FakeClock(),
    ids: sequentialIds(),
    readOnly: true,
  });
}

function counted(store: StateStore): ReadStats {
  store.readStats = { statements: 0, rows: 0, payloadRows: 0 };
  return store.readStats;
}

describe("viewer refresh reads", () => {
  it("reads nothing but the head on idle ticks, and only changed rows on a change", () => {
    fx = openFixture();
    const snapshot = compileWorkflow(reviewLoop).snapshot;
    const definition = { definition: snapshot, definitionDigest: fingerprint(snapshot) };
    const ids = [1, 2, 3].map(() => enqueue(fx!.store, definition));
    const claim = launch(fx.store, ids[0]);
    for (const [n, node] of ["plan", "review"].entries()) {
      const attemptId = `attempt-${n}`;
      recordNodeStarted(fx.store, claim, {
        attemptId,
        nodeId: node,
        nodeKind: "agent",
        effect: "external",
        deadlineAt: null,
      });
      if (node === "plan") recordNodeFinished(fx.store, claim, { attemptId, output: BIG });
    }

    ro = openViewerStore(fx);
    const stats = counted(ro);
    const data = createViewerData(ro, { all: true });
    watchRun(data, ids[0]);
    expect(refreshViewerData(data)).toBe(true);
    expect(data.runs.map((r) => r.runId).sort()).toEqual([...ids].sort());
    expect(data.watched!.attempts.map((a) => a.nodeId)).toEqual(["plan", "review"]);
    expect(data.watched!.graph!.nodes.length).toBe(6);
    // The first window: list, progress, attempts, one definition snapshot. No outputs.
    expect(stats.payloadRows).toBe(1);
    expect(stats.statements).toBeLessThanOrEqual(6);

    for (let i = 0; i < 5; i++) {
      const idle = counted(ro);
      expect(refreshViewerData(data)).toBe(false);
      expect(idle).toEqual({ statements: 1, rows: 1, payloadRows: 0 });
    }

    recordNodeUpdate(fx.store, claim, {
      attemptId: "attempt-1",
      type: "progress",
      key: "review",
      data: { schema: "pi-workflows.progress.v1", completed: 2, total: 5 },
    });
    const change = counted(ro);
    expect(refreshViewerData(data)).toBe(true);
    // Head, changed runs, that run's row, its progress row, its attempts from the open one.
    expect(change).toEqual({ statements: 5, rows: 5, payloadRows: 1 });
    expect(data.progress.get(ids[0])?.[0]).toMatchObject({ completed: 2, total: 5 });

    for (let i = 0; i < 3; i++) {
      const idle = counted(ro);
      expect(refreshViewerData(data)).toBe(false);
      expect(idle).toEqual({ statements: 1, rows: 1, payloadRows: 0 });
    }

    // The inspector reads a finished step's output once, then serves it from memory.
    const plan = data.watched!.attempts[0];
    const first = counted(ro);
    expect(attemptDetail(data, plan)?.output).toEqual(BIG);
    expect(first.payloadRows).toBe(1);
    const again = counted(ro);
    attemptDetail(data, plan);
    expect(again).toEqual({ statements: 0, rows: 0, payloadRows: 0 });
  });

  it("takes pruned runs off the list and out of the watched view (runs.pruned: a reload)", () => {
    fx = openFixture();
    const old = [0, 1].map(() => endedRun(fx!.store, { hostEpoch: HOST_EPOCH }));
    fx.clock.advance(40 * DAY_MS);
    const young = endedRun(fx.store, { hostEpoch: HOST_EPOCH });
    ro = openViewerStore(fx);
    const data = createViewerData(ro, { all: true });
    watchRun(data, old[0]);
    refreshViewerData(data);
    expect(data.runs.map((r) => r.runId).sort()).toEqual([...old, young].sort());
    expect(data.watched!.attempts.length).toBeGreaterThan(0);

    expect(runRetentionPass(fx.store, { keepDays: 30 }).report.runs).toBe(2);
    const tick = counted(ro);
    expect(refreshViewerData(data)).toBe(true);
    // One delta of no run for the whole pass; the viewer reloads its bounded window.
    expect(tick.payloadRows).toBe(0);
    expect(data.runs.map((r) => r.runId)).toEqual([young]);
    expect(data.watched!.row).toBeNull();
    expect(data.watched!.attempts).toEqual([]);
    expect(refreshViewerData(data)).toBe(false);
  });

  it("reloads a bounded window when more deltas arrived than one tick reads", () => {
    fx = openFixture();
    ro = undefined;
    const first = enqueue(fx.store);
    ro = openViewerStore(fx);
    const data = createViewerData(ro, { all: true });
    refreshViewerData(data);
    expect(data.runs.map((r) => r.runId)).toEqual([first]);
    for (let i = 0; i < 600; i++) enqueue(fx.store);
    const stats = counted(ro);
    expect(refreshViewerData(data)).toBe(true);
    expect(data.runs.length).toBe(601);
    expect(stats.payloadRows).toBe(0);
    expect(counted(ro) && refreshViewerData(data)).toBe(false);
  });
});
