import { constants } from "node:sqlite";
import { afterEach, describe, expect, test } from "vitest";
import { ClaimLostError, RevisionConflictError } from "../../src/state/errors.ts";
import { listAttempts, readRun } from "../../src/state/queries.ts";
import { asPassTransaction } from "../../src/state/retention/pass-transaction.ts";
import {
  afterGroupCommit,
  commitCount,
  groupTransaction,
  inCommitGroup,
  writeTransaction,
  writeUnsynced,
} from "../../src/state/transactions.ts";
import { execute } from "../../src/state/statements.ts";
import {
  recordNodeFinished,
  recordNodeStarted,
} from "../../src/state/transitions/node-attempts.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import {
  enqueue,
  type Fixture,
  launchWithAttempt,
  openFixture,
  snapshot,
} from "../support/state-store.ts";

let f: Fixture;
afterEach(() => f?.close());

describe("groupTransaction (group commit)", () => {
  test("writes of several runs share one COMMIT; a refused one leaves no trace", () => {
    f = openFixture();
    const a = launchWithAttempt(f.store, enqueue(f.store));
    const b = launchWithAttempt(f.store, enqueue(f.store));
    const revA = readRun(f.store, a.claim.runId!)!.revision;
    const commits: string[] = [];
    f.store.beforeStatement = (sql) => {
      if (sql === "COMMIT") commits.push(sql);
    };
    const effects: string[] = [];
    const outcomes = groupTransaction(f.store, () => {
      const results: string[] = [];
      recordNodeFinished(f.store, a.claim, { attemptId: a.attemptId, output: 1 });
      afterGroupCommit(f.store, () => effects.push("a"));
      results.push("a ok");
      try {
        // A stale revision: refused inside its own savepoint.
        recordNodeFinished(f.store, b.claim, {
          attemptId: b.attemptId,
          output: 2,
          expectedRevision: 0,
        });
      } catch (error) {
        expect(error).toBeInstanceOf(RevisionConflictError);
        results.push("b refused");
      }
      // Nothing has left before the shared COMMIT.
      expect(effects).toEqual([]);
      expect(inCommitGroup(f.store)).toBe(true);
      recordNodeStarted(f.store, a.claim, {
        attemptId: "a-2",
        nodeId: "next",
        nodeKind: "compute",
        effect: "pure",
        deadlineAt: null,
        expectedRevision: revA + 1,
      });
      afterGroupCommit(f.store, () => effects.push("a2"));
      return results;
    });
    f.store.beforeStatement = null;
    expect(outcomes).toEqual(["a ok", "b refused"]);
    expect(commits).toHaveLength(1);
    expect(effects).toEqual(["a", "a2"]);
    expect(inCommitGroup(f.store)).toBe(false);
    expect(listAttempts(f.store, a.claim.runId!).map((x) => x.state)).toEqual(["ok", "running"]);
    expect(listAttempts(f.store, b.claim.runId!).map((x) => x.state)).toEqual(["running"]);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  test("a paired start after a refused finish fails cleanly on its predicted revision", () => {
    f = openFixture();
    const a = launchWithAttempt(f.store, enqueue(f.store));
    const rev = readRun(f.store, a.claim.runId!)!.revision;
    const before = snapshot(f.store);
    groupTransaction(f.store, () => {
      expect(() =>
        recordNodeFinished(f.store, { ...a.claim, token: "wrong" }, {
          attemptId: a.attemptId,
          output: 1,
          expectedRevision: rev,
        })
      ).toThrow(ClaimLostError);
      expect(() =>
        recordNodeStarted(f.store, a.claim, {
          attemptId: "a-2",
          nodeId: "next",
          nodeKind: "compute",
          effect: "pure",
          deadlineAt: null,
          expectedRevision: rev + 1,
        })
      ).toThrow(RevisionConflictError);
    });
    expect(snapshot(f.store)).toBe(before);
  });

  test("a failed COMMIT keeps nothing and runs no effect", () => {
    f = openFixture();
    const a = launchWithAttempt(f.store, enqueue(f.store));
    const before = snapshot(f.store);
    const effects: string[] = [];
    f.store.beforeStatement = (sql) => {
      if (sql === "COMMIT") throw new Error("injected crash at COMMIT");
    };
    expect(() =>
      groupTransaction(f.store, () => {
        recordNodeFinished(f.store, a.claim, { attemptId: a.attemptId, output: 1 });
        afterGroupCommit(f.store, () => effects.push("a"));
      })
    ).toThrow(/injected crash/);
    f.store.beforeStatement = null;
    expect(effects).toEqual([]);
    expect(inCommitGroup(f.store)).toBe(false);
    expect(snapshot(f.store)).toBe(before);
  });
});

describe("writeUnsynced", () => {
  test("commits at synchronous=NORMAL and puts the host's FULL back; in a group it is the group's", () => {
    f = openFixture();
    const runId = enqueue(f.store);
    // The fixture commits unsynced for speed; the host's connection syncs every commit.
    f.store.db.exec("PRAGMA synchronous = FULL");
    const sync = () =>
      (f.store.db.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    const atCommit: number[] = [];
    f.store.beforeStatement = (sql) => {
      if (sql === "COMMIT") atCommit.push(sync());
    };
    const touch = () =>
      execute(f.store, "UPDATE run_queue SET updated_at = updated_at + 1 WHERE run_id = :runId", {
        runId,
      });
    expect(writeUnsynced(f.store, touch)).toBe(1);
    expect(atCommit).toEqual([1]);
    expect(sync()).toBe(2);
    // Again: the cached PRAGMA statements run a second time, each commit unsynced, FULL back.
    expect(writeUnsynced(f.store, touch)).toBe(1);
    expect(atCommit).toEqual([1, 1]);
    expect(sync()).toBe(2);
    expect(() =>
      writeUnsynced(f.store, () => {
        touch();
        throw new Error("refused");
      })
    ).toThrow("refused");
    expect(sync()).toBe(2);
    groupTransaction(f.store, () => writeUnsynced(f.store, touch));
    expect(atCommit).toEqual([1, 1, 2]);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  test("a ROLLBACK that fails: the original error, and FULL back before the next write", () => {
    f = openFixture();
    const runId = enqueue(f.store);
    f.store.db.exec("PRAGMA synchronous = FULL");
    const db = f.store.db;
    const sync = () =>
      (db.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
    const atCommit: number[] = [];
    // Fault injection on the real connection: the COMMIT fails, then the ROLLBACK does too and
    // leaves the transaction open (as an I/O error can).
    f.store.beforeStatement = (sql) => {
      if (sql !== "COMMIT") return;
      atCommit.push(sync());
      if (atCommit.length === 1) throw new Error("injected commit failure");
    };
    const exec = db.exec.bind(db);
    let failRollback = true;
    db.exec = (sql: string) => {
      if (sql === "ROLLBACK" && failRollback) {
        failRollback = false;
        throw new Error("injected rollback failure");
      }
      return exec(sql);
    };
    try {
      const touch = () =>
        execute(f.store, "UPDATE run_queue SET updated_at = updated_at + 1 WHERE run_id = :runId", {
          runId,
        });
      expect(() => writeUnsynced(f.store, touch)).toThrow("injected commit failure");
      expect(db.isTransaction).toBe(true);
      exec("ROLLBACK");
      // The next write, acknowledged, is synced: the restore left behind runs before its BEGIN.
      writeTransaction(f.store, touch);
      expect(atCommit).toEqual([1, 2]);
      expect(sync()).toBe(2);
      expect(() => writeUnsynced(f.store, touch)).not.toThrow();
      expect(atCommit).toEqual([1, 2, 1]);
      expect(sync()).toBe(2);
    } finally {
      db.exec = exec;
    }
  });

  test("a transaction a failed ROLLBACK left open is rolled back before the next write begins", () => {
    f = openFixture();
    const runId = enqueue(f.store);
    const db = f.store.db;
    const updatedAt = () =>
      (db.prepare("SELECT updated_at FROM run_queue WHERE run_id = ?").get(runId) as {
        updated_at: number;
      }).updated_at;
    const touch = (by: number) => () =>
      execute(f.store, "UPDATE run_queue SET updated_at = updated_at + :by WHERE run_id = :runId", {
        runId,
        by,
      });
    const refused = (by: number) => () => {
      touch(by)();
      throw new Error("refused");
    };
    // A real failure of SQLite's ROLLBACK statement: the authorizer denies it while `denied`.
    let denied = false;
    db.setAuthorizer((action, what) =>
      denied && action === constants.SQLITE_TRANSACTION && what === "ROLLBACK"
        ? constants.SQLITE_DENY
        : constants.SQLITE_OK
    );
    const start = updatedAt();
    const ways: [string, (fn: () => unknown) => unknown][] = [
      ["writeTransaction", (fn) => writeTransaction(f.store, fn)],
      ["groupTransaction", (fn) => groupTransaction(f.store, () => writeTransaction(f.store, fn))],
      ["writeUnsynced", (fn) => writeUnsynced(f.store, fn)],
    ];
    let expected = start;
    for (const [name, write] of ways) {
      denied = true;
      expect(() => write(refused(1000)), name).toThrow("refused");
      expect(db.isTransaction, name).toBe(true);
      // Still denied: the next write says why and leaves the transaction to the one after it.
      expect(() => write(touch(1)), name).toThrow("not authorized");
      denied = false;
      write(touch(1));
      expected += 1;
      expect(db.isTransaction, name).toBe(false);
      // The refused write's update never committed.
      expect(updatedAt(), name).toBe(expected);
    }
    db.setAuthorizer(null);
    expect(checkInvariants(f.store)).toEqual([]);
  });

  test("after a failed ROLLBACK a pass transaction has its settings and read caches start over", () => {
    f = openFixture();
    const runId = enqueue(f.store);
    const db = f.store.db;
    let denied = false;
    db.setAuthorizer((action, what) =>
      denied && action === constants.SQLITE_TRANSACTION && what === "ROLLBACK"
        ? constants.SQLITE_DENY
        : constants.SQLITE_OK
    );
    const pragma = (name: string) => Number(Object.values(db.prepare(`PRAGMA ${name}`).get()!)[0]);
    const before = commitCount(f.store);
    const synchronous = pragma("synchronous");
    denied = true;
    expect(() =>
      writeTransaction(f.store, () => {
        execute(f.store, "UPDATE run_queue SET updated_at = 0 WHERE run_id = :runId", { runId });
        throw new Error("refused");
      })
    ).toThrow("refused");
    denied = false;
    expect(db.isTransaction).toBe(true);
    // Reads in between see the refused update; a cache keyed on this count would keep them.
    expect(commitCount(f.store)).toBe(before);
    const inside = asPassTransaction(
      f.store,
      { checkForeignKeys: false },
      () =>
        writeTransaction(f.store, () => ({
          foreignKeys: pragma("foreign_keys"),
          synchronous: pragma("synchronous"),
          count: commitCount(f.store),
        })),
    );
    // The pass's own settings (not the host's FULL and foreign keys on, which would scan every
    // referencing table on each delete), and a count past the one the open transaction's reads saw.
    expect(inside).toEqual({ foreignKeys: 0, synchronous: 1, count: before + 1 });
    expect(pragma("foreign_keys")).toBe(1);
    expect(pragma("synchronous")).toBe(synchronous);
    db.setAuthorizer(null);
    expect(checkInvariants(f.store)).toEqual([]);
  });
});
