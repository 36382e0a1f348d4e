/**
 * The host's push to connected Pi sessions, as long polls on the request/response socket: a
 * `session.wait` call is held until something of the session's runs commits (its cursor, the sum
 * of those runs' revisions, moves) or its wait time passes. Every committed write pokes the
 * watch (`store.afterCommit`); the check of all waiting sessions is coalesced into one per
 * event-loop turn and costs one indexed query per waiting session. A host that stops answers
 * every held call at once, so a long poll never delays shutdown.
 */
import { sessionCursor } from "../state/interaction-queries.ts";
import type { StateStore } from "../state/store.ts";

export interface SessionWatch {
  /**
   * The session's cursor once it differs from `cursor` (at once without one, or when it already
   * differs), else the unchanged cursor after `waitMs`.
   */
  wait(sessionId: string, cursor: number | undefined, waitMs: number): Promise<{
    cursor: number;
    changed: boolean;
  }>;
  /** Resolves with `work`, or with null after `ms` or when the host stops. */
  until<T>(work: Promise<T>, ms: number): Promise<T | null>;
  /** A write committed: re-check the waiting sessions soon. */
  poke(): void;
  /** Answers every held call now and refuses to hold new ones. */
  close(): void;
}

interface Waiter {
  sessionId: string;
  cursor: number;
  answer(cursor: number, changed: boolean): void;
}

export function createSessionWatch(store: StateStore): SessionWatch {
  const waiters = new Set<Waiter>();
  let checkQueued = false;
  let closed = false;
  let onClose: () => void = () => {};
  const closing = new Promise<void>((resolve) => (onClose = resolve));

  const check = () => {
    checkQueued = false;
    if (store.db.isOpen === false) return;
    const cursors = new Map<string, number>();
    for (const waiter of [...waiters]) {
      let now = cursors.get(waiter.sessionId);
      if (now === undefined) {
        now = sessionCursor(store, waiter.sessionId);
        cursors.set(waiter.sessionId, now);
      }
      if (now !== waiter.cursor) waiter.answer(now, true);
    }
  };

  return {
    wait(sessionId, cursor, waitMs) {
      const now = sessionCursor(store, sessionId);
      if (cursor === undefined || cursor !== now || closed || waitMs === 0) {
        return Promise.resolve({ cursor: now, changed: cursor !== undefined && cursor !== now });
      }
      return new Promise((resolve) => {
        const timer = setTimeout(() => waiter.answer(cursor, false), waitMs);
        const waiter: Waiter = {
          sessionId,
          cursor,
          answer(next, changed) {
            if (!waiters.delete(waiter)) return;
            clearTimeout(timer);
            resolve({ cursor: next, changed });
          },
        };
        waiters.add(waiter);
      });
    },
    until(work, ms) {
      if (closed) return Promise.resolve(null);
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<null>((resolve) => {
        timer = setTimeout(() => resolve(null), ms);
      });
      return Promise.race([work, late, closing.then(() => null)]).finally(() =>
        clearTimeout(timer)
      );
    },
    poke() {
      if (checkQueued || waiters.size === 0) return;
      checkQueued = true;
      setImmediate(check);
    },
    close() {
      closed = true;
      onClose();
      for (const waiter of [...waiters]) waiter.answer(waiter.cursor, false);
    },
  };
}
