/**
 * Group commit of worker messages. Every message that arrives (from any worker) within one
 * event-loop turn is applied in the next check phase (or, for a group of lingering messages
 * only, after LINGER_MS) inside ONE `groupTransaction`: each
 * message's transition is its own savepoint (atomic on its own; a refused one leaves no trace
 * and does not fail the others), all share one COMMIT and one fsync. A task's result is handed
 * back only after that COMMIT, so no reply leaves before the write it acknowledges is durable;
 * in-memory effects registered with `afterGroupCommit` run right after the COMMIT, before any
 * reply. When the COMMIT fails, every task of the group is rejected with its error.
 */
import { type StateStore } from "../state/store.ts";
import { groupTransaction } from "../state/transactions.ts";

/** A task's outcome, handed back after the shared COMMIT. */
export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Task {
  run(): unknown;
  settle(outcome: Settled<unknown>): void;
}

interface Pending {
  tasks: Task[];
  /** The scheduled flush: at once after this turn, or a short linger timer. */
  timer: { kind: "immediate"; handle: NodeJS.Immediate } | {
    kind: "linger";
    handle: NodeJS.Timeout;
  };
}

const pending = new WeakMap<StateStore, Pending>();

/**
 * How long a group that holds only lingering messages waits for more: a pure node's close, whose
 * worker sends the next `node.started` right behind it (after routing, in microseconds), so
 * both share one commit. Any other message ends the wait at once.
 */
export const LINGER_MS = 2;

/**
 * Runs `task` inside the next shared commit; resolves with its result after the COMMIT. With
 * `linger` the commit may wait up to LINGER_MS for the message that usually follows.
 */
export function inNextCommit<T>(store: StateStore, task: () => T, linger = false): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    settleAfterNextCommit(store, task, linger, (outcome) => {
      if (outcome.ok) resolve(outcome.value);
      else reject(outcome.error);
    });
  });
}

/**
 * `inNextCommit` without a promise per task (the worker sessions' hot path): `settle` is called
 * synchronously right after the COMMIT and the group's `afterGroupCommit` effects, in the order
 * the tasks were queued, so a session can answer all its messages of one group in one write.
 */
export function settleAfterNextCommit<T>(
  store: StateStore,
  task: () => T,
  linger: boolean,
  settle: (outcome: Settled<T>) => void,
): void {
  let group = pending.get(store);
  if (group === undefined) {
    group = {
      tasks: [],
      timer: linger
        ? { kind: "linger", handle: setTimeout(() => flush(store), LINGER_MS) }
        : { kind: "immediate", handle: setImmediate(() => flush(store)) },
    };
    pending.set(store, group);
  } else if (!linger && group.timer.kind === "linger") {
    clearTimeout(group.timer.handle);
    // After the poll phase: every frame already read in this turn joins this commit.
    group.timer = { kind: "immediate", handle: setImmediate(() => flush(store)) };
  }
  group.tasks.push({ run: task, settle: settle as (outcome: Settled<unknown>) => void });
}

function flush(store: StateStore): void {
  const queue = pending.get(store)?.tasks ?? [];
  pending.delete(store);
  const results: Settled<unknown>[] = [];
  try {
    groupTransaction(store, () => {
      for (const task of queue) {
        try {
          results.push({ ok: true, value: task.run() });
        } catch (error) {
          results.push({ ok: false, error });
        }
      }
    });
  } catch (error) {
    settleAll(queue, () => ({ ok: false, error }));
    return;
  }
  settleAll(queue, (i) => results[i]);
}

/** Every task is settled even if one callback throws (a bug, rethrown once all are told). */
function settleAll(queue: Task[], outcome: (i: number) => Settled<unknown>): void {
  let failure: { error: unknown } | null = null;
  queue.forEach((task, i) => {
    try {
      task.settle(outcome(i));
    } catch (error) {
      failure ??= { error };
    }
  });
  if (failure !== null) throw (failure as { error: unknown }).error;
}
