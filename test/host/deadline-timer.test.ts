/**
 * The host deadline timer against fake kinds with the real clock: it arms for the earliest due
 * time, applies then, re-reads once, and otherwise stays quiet (no polling).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  createDeadlineTimer,
  type DeadlineKind,
  type DeadlineRuntime,
  type DeadlineTimer,
} from "../../src/host/deadline-timer.ts";
import { systemClock } from "../../src/base/clock.ts";
import type { StateStore } from "../../src/state/store.ts";
import { waitFor } from "../support/wait.ts";

interface FakeKind extends DeadlineKind {
  due: number[];
  queries: number;
  applied: { at: number; count: number }[];
}

function fakeKind(name: string, due: number[] = []): FakeKind {
  const kind: FakeKind = {
    name,
    due,
    queries: 0,
    applied: [],
    nextDue() {
      kind.queries++;
      return kind.due.length ? Math.min(...kind.due) : null;
    },
    applyDue(_rt, now, limit) {
      kind.due.sort((x, y) => x - y);
      let count = 0;
      while (count < limit && count < kind.due.length && kind.due[count] <= now) count++;
      const ready = kind.due.splice(0, count);
      if (ready.length) kind.applied.push({ at: now, count: ready.length });
      return ready.length;
    },
  };
  return kind;
}

const logs: string[] = [];
let wakes = 0;
const rt: DeadlineRuntime = {
  store: {} as StateStore,
  clock: systemClock,
  ids: { next: () => "x", token: () => "t" },
  ownerId: "host-test",
  log: (event) => void logs.push(event),
  wake: () => void wakes++,
};

let timer: DeadlineTimer | null = null;
afterEach(() => timer?.stop());

const until = (ok: () => boolean, what: string) => waitFor(ok, what, 5_000, 10);

describe("createDeadlineTimer()", () => {
  it("applies what is already due at start, then arms for the earliest deadline only", async () => {
    const now = Date.now();
    const a = fakeKind("a", [now - 10, now + 300]);
    const b = fakeKind("b", [now + 150]);
    timer = createDeadlineTimer(rt, [a, b]);
    timer.start();
    expect(a.applied).toHaveLength(1); // the past one, before start() returned
    expect(timer.nextDueAt()).toBe(now + 150);
    expect(timer.hasPending()).toBe(true);
    await until(() => b.applied.length === 1, "b's deadline applied");
    expect(b.applied[0].at).toBeGreaterThanOrEqual(now + 150);
    expect(timer.nextDueAt()).toBe(now + 300);
    await until(() => a.applied.length === 2, "a's second deadline applied");
    expect(a.applied[1].at).toBeGreaterThanOrEqual(now + 300);
    expect(timer.hasPending()).toBe(false);
    // Idle with nothing pending: no more queries, no timer.
    const queries = a.queries + b.queries;
    await new Promise((r) => setTimeout(r, 300));
    expect(a.queries + b.queries).toBe(queries);
  });

  it("re-arms when a deadline is added and drains a full batch at once", async () => {
    const k = fakeKind("k");
    timer = createDeadlineTimer(rt, [k]);
    timer.start();
    expect(timer.hasPending()).toBe(false);
    const now = Date.now();
    k.due = Array.from({ length: 250 }, () => now + 50);
    timer.changed();
    expect(timer.nextDueAt()).toBe(now + 50);
    await until(() => k.due.length === 0, "every due deadline applied");
    expect(k.applied.map((a) => a.count)).toEqual([100, 100, 50]);
  });

  it("logs a failing kind and retries it later without spinning", async () => {
    let calls = 0;
    const failing: DeadlineKind = {
      name: "failing",
      nextDue: () => Date.now() - 1,
      applyDue: () => {
        calls++;
        throw new Error("database is locked");
      },
    };
    timer = createDeadlineTimer(rt, [failing]);
    timer.start();
    expect(logs).toContain("deadline.failed");
    const after = calls;
    await new Promise((r) => setTimeout(r, 300));
    expect(calls).toBe(after); // the retry waits about a second
    expect(timer.nextDueAt()).toBeGreaterThan(Date.now());
  });
});
