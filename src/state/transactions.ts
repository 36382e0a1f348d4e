/**
 * Write transactions on the state store: one `BEGIN IMMEDIATE … COMMIT` per write, or a group
 * commit in which several writes share one COMMIT (and one fsync) as savepoints of their own.
 */
import { appendFileSync } from "node:fs";
import { cachedStatement, prepared } from "./statements.ts";
import type { StateStore } from "./store-handle.ts";

/** Runs `fn` inside `BEGIN IMMEDIATE … COMMIT`; any throw rolls everything back. */
export function writeTransaction<T>(store: StateStore, fn: () => T): T {
  if (store.readOnly) throw new Error("Cannot write: the state store was opened read-only");
  const group = groups.get(store);
  if (group !== undefined) return savepoint(store, group, fn);
  settleConnection(store);
  if (store.db.isTransaction) throw new Error("Cannot nest state transactions");
  // Cached statements: `exec` would parse BEGIN and COMMIT again on every write.
  prepared(store, "BEGIN IMMEDIATE").run();
  try {
    const result = fn();
    store.beforeStatement?.("COMMIT");
    cachedStatement(store, "COMMIT").run();
    committed(store);
    return result;
  } catch (error) {
    rollback(store);
    throw error;
  }
}

/**
 * Stores whose last ROLLBACK failed (an I/O error can), leaving the transaction open: its writes
 * were never committed, and the next write, group or connection setting rolls it back before it
 * begins (`settleConnection`) instead of refusing to nest in it for the connection's life.
 */
const leftOpen = new WeakSet<StateStore>();

/** Rolls back what is open; a ROLLBACK that fails must not hide the error that caused it. */
function rollback(store: StateStore): void {
  try {
    if (store.db.isTransaction) store.db.exec("ROLLBACK");
  } catch {
    // The caller rethrows the original error; the next write rolls back first.
    leftOpen.add(store);
  }
}

/**
 * Connection settings (`PRAGMA <name> = <value>`) still to put back: `synchronous` and
 * `foreign_keys` cannot change inside a transaction (the first throws, the second is ignored), so
 * a restore that finds one left open (a failed ROLLBACK) is kept here and done before the next
 * BEGIN: a later acknowledged commit never runs at a level meant for one unsynced write.
 */
const pending = new WeakMap<StateStore, Map<string, number>>();

/**
 * Before a BEGIN or a setting (or a retention pass's transaction): the transaction a failed
 * ROLLBACK left, then settings to put back.
 */
export function settleConnection(store: StateStore): void {
  if (leftOpen.has(store)) {
    // A ROLLBACK that fails again throws here, and the next write tries once more.
    if (store.db.isTransaction) store.db.exec("ROLLBACK");
    leftOpen.delete(store);
    // Reads while it was open saw its writes: a cache keyed on the count drops what it kept.
    commits.set(store, commitCount(store) + 1);
  }
  const settings = pending.get(store);
  if (settings === undefined || store.db.isTransaction) return;
  for (const [name, value] of settings) {
    store.db.exec(`PRAGMA ${name} = ${value}`);
    settings.delete(name);
  }
  pending.delete(store);
}

/**
 * Runs `fn` with the connection's `PRAGMA <name>` at `wanted(before)` and puts the setting before
 * back, now or (while a transaction is left open) before the next BEGIN. Outside a transaction.
 */
export function withConnectionSetting<T>(
  store: StateStore,
  name: "synchronous" | "foreign_keys",
  wanted: (before: number) => number,
  fn: () => T,
): T {
  settleConnection(store);
  // Cached: an unsynced write is on the handoff's path, and `exec` would parse these each time.
  const before = Number(Object.values(cachedStatement(store, `PRAGMA ${name}`).get()!)[0]);
  const value = wanted(before);
  if (value === before) return fn();
  cachedStatement(store, `PRAGMA ${name} = ${value}`).run();
  try {
    return fn();
  } finally {
    if (store.db.isTransaction) {
      const settings = pending.get(store) ?? new Map<string, number>();
      settings.set(name, before);
      pending.set(store, settings);
    } else {
      cachedStatement(store, `PRAGMA ${name} = ${before}`).run();
    }
  }
}

/**
 * `writeTransaction` with its COMMIT not synced (`synchronous=NORMAL` around it; the host's own
 * setting is back when it returns): only for a write that acknowledges nothing to anyone and
 * whose loss leaves a state a crash just before it leaves too (a claim time that only informs,
 * the end of an epoch whose process the host keeps). In WAL mode such a commit survives a crash
 * of the process like any other; a power loss can take it back (with nothing after it but other
 * unsynced commits), and the next synced commit makes it durable with its own fsync. So the host
 * does not stop for an fsync between a step's answer and the next submit (issue 37).
 * Inside a caller's transaction or group it is simply part of that.
 */
export function writeUnsynced<T>(store: StateStore, fn: () => T): T {
  settleConnection(store);
  if (store.db.isTransaction) return writeTransaction(store, fn);
  // Never raises a lower level (a test fixture's OFF stays OFF).
  return withConnectionSetting(
    store,
    "synchronous",
    (before) => Math.min(before, 1),
    () => writeTransaction(store, fn),
  );
}

const commits = new WeakMap<StateStore, number>();

/**
 * How many write transactions (or groups) have committed on this connection. The host is the
 * only writer, so an unchanged count means nothing changed: caches of read answers key on it.
 */
export function commitCount(store: StateStore): number {
  return commits.get(store) ?? 0;
}

/**
 * Bench hook: `PI_WORKFLOWS_COMMIT_TRACE=<file>` appends each commit's time on the store's clock
 * (the clock of every committed `at`) and the newest event sequence after it to the file, so
 * `npm run bench -- interaction` can count the commits on a handoff's path. Only commits that changed rows are traced: a group commit of
 * messages that wrote nothing (a prepared process's `worker.ready`) writes no page and syncs
 * nothing. Unset in production: one env read per process.
 */
let commitTrace: string | undefined;
const tracedChanges = new WeakMap<StateStore, number>();

function committed(store: StateStore): void {
  commits.set(store, (commits.get(store) ?? 0) + 1);
  commitTrace ??= process.env.PI_WORKFLOWS_COMMIT_TRACE ?? "";
  if (commitTrace !== "") {
    const changes = Number(
      (cachedStatement(store, "SELECT total_changes() AS n").get() as { n: number }).n,
    );
    if (changes !== tracedChanges.get(store)) {
      tracedChanges.set(store, changes);
      // With the newest event sequence it made durable: a bench finds the commit of an event
      // exactly, not by its millisecond (two commits often share one).
      const seq = (cachedStatement(store, "SELECT MAX(seq) AS seq FROM events").get() as {
        seq: number | null;
      }).seq ?? 0;
      appendFileSync(commitTrace, `${store.clock.now()} ${seq}\n`);
    }
  }
  store.afterCommit?.();
}

/**
 * Bench hook: with `PI_WORKFLOWS_COMMIT_TRACE` set, a `<time> <label>` line in the same file
 * marks a moment that is not a commit (the host's read of a submit: `submit`), on the same clock.
 */
export function traceMark(store: StateStore, label: string): void {
  commitTrace ??= process.env.PI_WORKFLOWS_COMMIT_TRACE ?? "";
  if (commitTrace !== "") appendFileSync(commitTrace, `${store.clock.now()} ${label}\n`);
}

interface CommitGroup {
  /** In-memory effects of the group's writes, run in order once the shared COMMIT is durable. */
  readonly afterCommit: Array<() => void>;
  depth: number;
}

const groups = new WeakMap<StateStore, CommitGroup>();

/**
 * Group commit: every `writeTransaction` inside `fn` runs as its own SAVEPOINT of one shared
 * `BEGIN IMMEDIATE … COMMIT`, so each write stays atomic on its own (a refused write rolls back
 * to its savepoint, leaves no trace and does not fail the others) while all of them share one
 * COMMIT and one fsync. Nothing may leave the process before that COMMIT: callers register
 * in-memory effects (replies, timers, wake-ups) with `afterGroupCommit`, which run only after it.
 * When the COMMIT itself fails, every write of the group is gone; the error is thrown and no
 * registered effect runs.
 */
export function groupTransaction<T>(store: StateStore, fn: () => T): T {
  if (store.readOnly) throw new Error("Cannot write: the state store was opened read-only");
  settleConnection(store);
  if (store.db.isTransaction) throw new Error("Cannot nest state transactions");
  const group: CommitGroup = { afterCommit: [], depth: 0 };
  prepared(store, "BEGIN IMMEDIATE").run();
  groups.set(store, group);
  let result: T;
  try {
    result = fn();
    store.beforeStatement?.("COMMIT");
    cachedStatement(store, "COMMIT").run();
  } catch (error) {
    groups.delete(store);
    rollback(store);
    throw error;
  } finally {
    groups.delete(store);
  }
  committed(store);
  for (const effect of group.afterCommit) effect();
  return result;
}

/** Runs `effect` after the current group's COMMIT, or at once outside a group. */
export function afterGroupCommit(store: StateStore, effect: () => void): void {
  const group = groups.get(store);
  if (group === undefined) effect();
  else group.afterCommit.push(effect);
}

/** True while a `groupTransaction` is open on `store`. */
export function inCommitGroup(store: StateStore): boolean {
  return groups.has(store);
}

function savepoint<T>(store: StateStore, group: CommitGroup, fn: () => T): T {
  const name = `w${group.depth++}`;
  cachedStatement(store, `SAVEPOINT ${name}`).run();
  try {
    const result = fn();
    cachedStatement(store, `RELEASE ${name}`).run();
    return result;
  } catch (error) {
    cachedStatement(store, `ROLLBACK TO ${name}`).run();
    cachedStatement(store, `RELEASE ${name}`).run();
    throw error;
  } finally {
    group.depth--;
  }
}
