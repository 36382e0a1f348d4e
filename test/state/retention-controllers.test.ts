/**
 * Retention of controller history (src/state/retention/controller-history.ts): events and ended
 * worker epochs past the period go, each resource's newest events and each controller's newest
 * epoch stay, young rows and live epochs stay, a dry run counts what the prune removes, and the
 * delete triggers refuse any delete outside a prune's transaction.
 */
import { afterEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../src/state/invariants.ts";
import { DAY_MS, runRetentionPass } from "../../src/state/retention/retention-pass.ts";
import { appendControllerEvent } from "../../src/state/controllers/controller-records.ts";
import {
  finishControllerWorker,
  markControllerWorkerLive,
  startControllerWorker,
} from "../../src/state/controllers/controller-workers.ts";
import { readResourceDetail } from "../../src/state/controllers/controller-queries.ts";
import { type Fixture, openFixture } from "../support/state-store.ts";

let fx: Fixture;
afterEach(() => fx?.close());

function addController(fx: Fixture, id: string): void {
  const now = fx.clock.now();
  fx.store.db.prepare(
    "INSERT INTO controllers (controller_id, project_path, name, source_ref, source_json, " +
      "source_digest, timeout_ms, revision, created_at, updated_at) VALUES (?, '/p', ?, 'r', " +
      "'{}', 'd', 1000, 1, ?, ?)",
  ).run(id, id, now, now);
}

function addResource(fx: Fixture, controllerId: string, uid: string): void {
  const now = fx.clock.now();
  fx.store.db.prepare(
    "INSERT INTO controller_resources (uid, controller_id, resource_key, resource_version, " +
      "generation, spec_json, status_json, finalizers_json, created_at, updated_at) VALUES " +
      "(?, ?, ?, 1, 1, '{}', '{}', '[]', ?, ?)",
  ).run(uid, controllerId, uid, now, now);
  fx.store.db.prepare(
    "INSERT INTO controller_queue (uid, pending, available_at, version, consecutive_errors, " +
      "updated_at) VALUES (?, 0, ?, 1, 0, ?)",
  ).run(uid, now, now);
}

/** `n` events of the resource a minute apart, each at the next resource version. */
function addEvents(fx: Fixture, uid: string, n: number): void {
  for (let i = 0; i < n; i++) {
    fx.clock.advance(60_000);
    const version = (fx.store.db.prepare(
      "UPDATE controller_resources SET resource_version = resource_version + 1 WHERE uid = ? " +
        "RETURNING resource_version",
    ).get(uid) as { resource_version: number }).resource_version;
    appendControllerEvent(fx.store, uid, version, "reconciled", { n: i }, fx.clock.now());
  }
}

function removeResource(fx: Fixture, uid: string): void {
  const now = fx.clock.now();
  fx.store.db.prepare(
    "UPDATE controller_resources SET deletion_requested_at = ?, removed_at = ? WHERE uid = ?",
  ).run(now, now, uid);
  fx.store.db.prepare("DELETE FROM controller_queue WHERE uid = ?").run(uid);
}

/** An epoch of the controller that starts and (unless `live`) exits a minute later. */
function addWorker(fx: Fixture, controllerId: string, epoch: string, live = false): void {
  startControllerWorker(fx.store, { workerEpoch: epoch, controllerId, sourceDigest: "d" });
  markControllerWorkerLive(fx.store, epoch);
  fx.clock.advance(60_000);
  if (!live) {
    finishControllerWorker(fx.store, {
      workerEpoch: epoch,
      status: "exited",
      exitCode: 0,
      signal: null,
    });
  }
}

const eventCounts = (fx: Fixture): Record<string, number> =>
  Object.fromEntries(
    (fx.store.db.prepare("SELECT uid, COUNT(*) AS n FROM controller_events GROUP BY uid").all() as {
      uid: string;
      n: number;
    }[]).map((r) => [r.uid, r.n]),
  );

const epochs = (fx: Fixture): string[] =>
  (fx.store.db.prepare("SELECT worker_epoch FROM controller_workers ORDER BY rowid").all() as {
    worker_epoch: string;
  }[]).map((r) => r.worker_epoch);

/** Events of every kind of resource, old and young; epochs of three controllers. */
function seed(fx: Fixture): void {
  addController(fx, "c1");
  addController(fx, "c2");
  addController(fx, "c3");
  for (const uid of ["busy", "quiet", "gone", "young"]) addResource(fx, "c1", uid);
  addEvents(fx, "busy", 30);
  addEvents(fx, "quiet", 10);
  addEvents(fx, "gone", 8);
  removeResource(fx, "gone");
  addWorker(fx, "c1", "cwep-old-1");
  addWorker(fx, "c1", "cwep-old-2");
  addWorker(fx, "c2", "cwep-only");
  addWorker(fx, "c3", "cwep-old-3");
  addWorker(fx, "c3", "cwep-live-old", true);
  fx.clock.advance(40 * DAY_MS);
  addEvents(fx, "busy", 5);
  addEvents(fx, "young", 25);
  addWorker(fx, "c1", "cwep-young");
}

describe("controller history retention", () => {
  it("prunes old events past each resource's newest 20 and a removed resource's old events", () => {
    fx = openFixture();
    seed(fx);
    const busy = { projectPath: "/p", name: "c1", key: "busy" };
    const shown = readResourceDetail(fx.store, busy);
    expect(shown?.events).toHaveLength(20);
    const pass = runRetentionPass(fx.store, { keepDays: 30 });
    // busy: 35 events, its newest 20 (5 young, 15 old) kept; quiet: fewer than 20, all kept;
    // gone: removed before the period, all of its old events go; young: none old.
    expect(eventCounts(fx)).toEqual({ busy: 20, quiet: 10, young: 25 });
    expect(pass.report.rows.controller_events).toBe(15 + 8);
    expect(readResourceDetail(fx.store, busy)).toEqual(shown);
    expect(checkInvariants(fx.store)).toEqual([]);
    // Nothing more to do: a second pass deletes nothing.
    expect(runRetentionPass(fx.store, { keepDays: 30 }).report.rows.controller_events)
      .toBeUndefined();
  });

  it("prunes ended epochs past the period but each controller's newest and the live ones", () => {
    fx = openFixture();
    seed(fx);
    const pass = runRetentionPass(fx.store, { keepDays: 30 });
    // c1's newest is young; c2's only epoch is old but its newest; c3's newest is live.
    expect(epochs(fx)).toEqual(["cwep-only", "cwep-live-old", "cwep-young"]);
    expect(pass.report.rows.controller_workers).toBe(3);
    // Their captured output files go too (the host removes the epochs handed over).
    expect([...pass.takePruned().epochs].sort()).toEqual([
      "cwep-old-1",
      "cwep-old-2",
      "cwep-old-3",
    ]);
    expect(checkInvariants(fx.store)).toEqual([]);
    // Once the live epoch ended, before the period, and it is not the newest any more, it goes.
    finishControllerWorker(fx.store, {
      workerEpoch: "cwep-live-old",
      status: "crashed",
      exitCode: null,
      signal: "SIGKILL",
    });
    addWorker(fx, "c3", "cwep-new");
    fx.clock.advance(40 * DAY_MS);
    runRetentionPass(fx.store, { keepDays: 30 });
    expect(epochs(fx)).toEqual(["cwep-only", "cwep-young", "cwep-new"]);
  });

  it("keeps everything younger than the period, and prunes it once past", () => {
    fx = openFixture();
    seed(fx);
    const events = eventCounts(fx);
    const workers = epochs(fx);
    const pass = runRetentionPass(fx.store, { keepDays: 60 });
    expect(eventCounts(fx)).toEqual(events);
    expect(epochs(fx)).toEqual(workers);
    expect(pass.report.rows).toEqual({});
    // The same history under a shorter period: the old rows go, the young ones stay.
    fx.clock.advance(25 * DAY_MS);
    runRetentionPass(fx.store, { keepDays: 60 });
    expect(eventCounts(fx)).toEqual({ busy: 20, quiet: 10, young: 25 });
    expect(epochs(fx)).toEqual(["cwep-only", "cwep-live-old", "cwep-young"]);
  });

  it("counts in a dry run what the prune removes, and removes nothing", () => {
    fx = openFixture();
    seed(fx);
    const events = eventCounts(fx);
    const dry = runRetentionPass(fx.store, { keepDays: 30, dryRun: true });
    expect(eventCounts(fx)).toEqual(events);
    expect(dry.report.rows).toEqual({ controller_events: 23, controller_workers: 3 });
    expect(dry.report.bytes).toBeGreaterThan(0);
    const pass = runRetentionPass(fx.store, { keepDays: 30 });
    expect(pass.report.rows).toEqual(dry.report.rows);
  });

  it("walks a history longer than a transaction's pages in bounded transactions", () => {
    fx = openFixture();
    addController(fx, "c1");
    addResource(fx, "c1", "u");
    addEvents(fx, "u", 1_000);
    fx.clock.advance(40 * DAY_MS);
    const pass = runRetentionPass(fx.store, { keepDays: 30, stepBudgetMs: 0 });
    expect(eventCounts(fx)).toEqual({ u: 20 });
    expect(pass.report.rows.controller_events).toBe(980);
    // A page of 200 rows a transaction under a zero budget.
    expect(pass.report.transactions).toBeGreaterThanOrEqual(5);
  });

  it("writes no transaction for a history with nothing to delete: the kept rows are only read", () => {
    fx = openFixture();
    seed(fx);
    expect(runRetentionPass(fx.store, { keepDays: 30 }).report.rows.controller_events).toBe(23);
    // What is left is kept (each resource's newest 20, each controller's newest epoch, live and
    // young rows): a pass reads past it without taking the write lock for it.
    const again = runRetentionPass(fx.store, { keepDays: 30 });
    expect(again.report.rows).toEqual({});
    expect(again.report.longestLockMsByPhase.controllers).toBeUndefined();
  });

  it("walks past a row dated ahead of its neighbours (a clock that ran ahead): the old rows after it go", () => {
    fx = openFixture();
    addController(fx, "c1");
    addResource(fx, "c1", "u");
    addEvents(fx, "u", 10);
    addWorker(fx, "c1", "cwep-1");
    // One event and one epoch written while the clock ran 100 days ahead, then set back.
    const now = fx.clock.now();
    fx.clock.set(now + 100 * DAY_MS);
    addEvents(fx, "u", 1);
    addWorker(fx, "c1", "cwep-ahead");
    fx.clock.set(now + 60_000);
    addEvents(fx, "u", 30);
    addWorker(fx, "c1", "cwep-2");
    addWorker(fx, "c1", "cwep-3");
    fx.clock.advance(40 * DAY_MS);
    const pass = runRetentionPass(fx.store, { keepDays: 30 });
    // The newest 20 events and the one ahead (not past the period) stay; the 20 other old ones
    // go, those after the one ahead too. Of the epochs, the one ahead and the newest stay.
    expect(eventCounts(fx)).toEqual({ u: 21 });
    expect(pass.report.rows.controller_events).toBe(20);
    expect(epochs(fx)).toEqual(["cwep-ahead", "cwep-3"]);
    expect(checkInvariants(fx.store)).toEqual([]);
  });

  it("refuses a delete of events or epochs outside a prune", () => {
    fx = openFixture();
    seed(fx);
    const db = fx.store.db;
    expect(() => db.exec("DELETE FROM controller_events")).toThrow(
      /controller events are deleted only by a retention prune/,
    );
    expect(() => db.exec("DELETE FROM controller_workers WHERE worker_epoch = 'cwep-old-1'"))
      .toThrow(/controller workers are deleted only by a retention prune/);
    // Under a prune's row: only rows older than its cutoff, and never a live epoch.
    db.exec("BEGIN");
    try {
      const cutoff = fx.clock.now() - 30 * DAY_MS;
      db.prepare("INSERT INTO controller_prunes (id, before) VALUES (1, ?)").run(cutoff);
      expect(() => db.exec("DELETE FROM controller_events WHERE uid = 'young'")).toThrow(
        /deleted only by a retention prune/,
      );
      expect(() => db.exec("DELETE FROM controller_workers WHERE worker_epoch = 'cwep-live-old'"))
        .toThrow(/deleted only by a retention prune/);
      expect(() => db.exec("DELETE FROM controller_workers WHERE worker_epoch = 'cwep-young'"))
        .toThrow(/deleted only by a retention prune/);
    } finally {
      db.exec("ROLLBACK");
    }
    expect(eventCounts(fx)).toEqual({ busy: 35, quiet: 10, gone: 8, young: 25 });
    expect(epochs(fx)).toHaveLength(6);
  });
});
