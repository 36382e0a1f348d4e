/**
 * The host's one timer for deadlines that fall due while no worker runs: a human decision's
 * `onTimeout` default, a waiting checkpoint's or decision's own `timeoutMs`, and (registered by
 * their owners) other waiting work. It never polls: each kind names its earliest due time with
 * one indexed query, the timer arms a single `setTimeout` for the earliest of them, applies what
 * is due when it fires, and arms again. Idle cost is one pending timer, however many runs wait.
 *
 * States: `stopped` (before start and after stop), `armed` (one timeout set for `nextDueAt`, or
 * none when nothing is pending), `applying` (a round runs; `changed()` meanwhile re-reads after
 * it). A kind is one `DeadlineKind` registered in deadline-kinds.ts.
 */
import type { Clock, IdSource } from "../base/clock.ts";
import type { StateStore } from "../state/store.ts";
import type { HostLog } from "./host-log.ts";
import { logError } from "./host-log.ts";

/** One kind of deadline. Its SQL lives in src/state; this is how the timer drives it. */
export interface DeadlineKind {
  /** Names the kind in logs (`deadline.failed kind=...`). */
  readonly name: string;
  /** The earliest pending due time of this kind (epoch ms), or null: one indexed query. */
  nextDue(store: StateStore): number | null;
  /**
   * Handles up to `limit` deadlines due at `now`, each in its own transaction, skipping quietly
   * one that closed meanwhile (answered, cancelled). Returns how many it handled; `limit` means
   * more may be due, and the timer calls again at once.
   */
  applyDue(rt: DeadlineRuntime, now: number, limit: number): number;
}

export interface DeadlineRuntime {
  readonly store: StateStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** Owner id of this host, for the control claims deadlines take. */
  readonly ownerId: string;
  readonly log: HostLog;
  /** A run became launchable: let the scheduler start its worker. */
  wake(): void;
}

export interface DeadlineTimer {
  /** Applies everything already due (start-up recovery), then arms for the next deadline. */
  start(): void;
  /** A deadline was added, moved or removed: read the next due time again and re-arm. */
  changed(): void;
  /** Whether a deadline is pending: a scheduled wake, which keeps the host alive. */
  hasPending(): boolean;
  /** The due time the timer is armed for (null: nothing pending or stopped). */
  nextDueAt(): number | null;
  stop(): void;
}

/** Deadlines handled per kind and round before the timer yields to the event loop. */
const BATCH = 100;
/** A deadline still due after a round that made no progress (a busy database) is retried. */
const RETRY_MS = 1_000;
/**
 * The longest single wait. Node timers follow a monotonic clock that may stop while the machine
 * sleeps, and the wall clock may be stepped; re-reading now and then bounds how late a deadline
 * can be applied after either. It is one indexed query per kind, and only while one is pending.
 */
const MAX_WAIT_MS = 60_000;

export function createDeadlineTimer(
  rt: DeadlineRuntime,
  kinds: readonly DeadlineKind[],
): DeadlineTimer {
  let running = false;
  let applying = false;
  let rearm = false;
  let timer: ReturnType<typeof setTimeout> | null = null;
  let due: number | null = null;

  const nextDue = (): number | null => {
    let earliest: number | null = null;
    for (const kind of kinds) {
      try {
        const at = kind.nextDue(rt.store);
        if (at !== null && (earliest === null || at < earliest)) earliest = at;
      } catch (error) {
        // A busy database: try again shortly rather than forget the deadline.
        rt.log("deadline.queryFailed", { kind: kind.name, error: logError(error) });
        const retry = rt.clock.now() + RETRY_MS;
        if (earliest === null || retry < earliest) earliest = retry;
      }
    }
    return earliest;
  };

  const arm = (at: number | null, now: number) => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    due = at;
    if (!running || at === null) return;
    timer = setTimeout(fire, Math.min(Math.max(0, at - now), MAX_WAIT_MS));
  };

  /** One round: every kind applies what is due now. Returns whether a kind filled its batch. */
  const round = (now: number): boolean => {
    let more = false;
    for (const kind of kinds) {
      try {
        if (kind.applyDue(rt, now, BATCH) >= BATCH) more = true;
      } catch (error) {
        rt.log("deadline.failed", { kind: kind.name, error: logError(error) });
      }
    }
    return more;
  };

  function fire(): void {
    timer = null;
    if (!running || applying) return;
    applying = true;
    let more: boolean;
    try {
      more = round(rt.clock.now());
    } finally {
      applying = false;
    }
    const now = rt.clock.now();
    if (more || rearm) {
      rearm = false;
      if (timer !== null) clearTimeout(timer);
      due = now;
      timer = setTimeout(fire, 0);
      return;
    }
    const next = nextDue();
    // Still due after a full round: it failed (busy) or raced; retry later, never spin.
    arm(next !== null && next <= now ? now + RETRY_MS : next, now);
  }

  return {
    start() {
      if (running) return;
      running = true;
      // Recovery: everything that fell due while no host ran, before other work is scheduled.
      for (let rounds = 0; rounds < 10_000 && round(rt.clock.now()); rounds++);
      const now = rt.clock.now();
      const next = nextDue();
      arm(next !== null && next <= now ? now + RETRY_MS : next, now);
    },
    changed() {
      if (!running) return;
      if (applying) {
        rearm = true;
        return;
      }
      arm(nextDue(), rt.clock.now());
    },
    hasPending() {
      return running && due !== null;
    },
    nextDueAt() {
      return running ? due : null;
    },
    stop() {
      running = false;
      if (timer !== null) clearTimeout(timer);
      timer = null;
      due = null;
    },
  };
}

/** Only the class name: messages may carry paths, which logs never show. */
