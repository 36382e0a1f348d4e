/**
 * RunWatch announces a run's end once. The session follows its run from several sources (the
 * long poll's `activeRun`, the last step claim, the current step), and a read made before the
 * run ended may name it after the end was already announced: that must not follow the run again
 * (in the real Pi one completion showed as up to three "Workflow … completed" notices).
 */
import { describe, expect, it } from "vitest";
import { RunWatch } from "../../src/extension/run-watch.ts";
import type { HostClient } from "../../src/client/host-client.ts";
import type { PiExtensionApi, PiSessionManager, PiUi } from "../../src/extension/pi-api.ts";
import type { AttemptSummary, RunSummary } from "../../src/protocol/run-operations.ts";
import { widgetLines } from "../../src/extension/progress-view.ts";
import { ANSWER_BUDGET_BYTES, prefixWithin, suffixWithin } from "../../src/host/answer-budget.ts";

const T0 = Date.UTC(2026, 0, 1);

function summary(state: string): RunSummary {
  return {
    runId: "run-1",
    workflowName: "demo",
    title: null,
    state,
    queueState: state === "completed" ? "done" : "running",
    paused: false,
    revision: 3,
    executionMode: "interactive",
    createdAt: T0,
    updatedAt: T0,
  } as RunSummary;
}

function watch() {
  let state = "running";
  const notices: string[] = [];
  const reads: string[] = [];
  const client = {
    call: (operation: string, options: { runId: string }) => {
      reads.push(`${operation} ${options.runId}`);
      return Promise.resolve({ run: summary(state), attempts: [], updates: [] });
    },
  } as unknown as HostClient;
  const ui: PiUi = {
    notify: (message) => notices.push(message),
    setStatus: () => {},
    setWidget: () => {},
  };
  const runs = new RunWatch({
    pi: {} as PiExtensionApi,
    client,
    ui: () => ui,
    session: () =>
      ({
        getSessionId: () => "s",
        getBranch: () => [],
        getLeafId: () => null,
        getEntry: () => undefined,
      }) as PiSessionManager,
    detailFor: () => null,
  });
  return { runs, notices, reads, end: () => (state = "completed") };
}

describe("RunWatch", () => {
  it("announces a run's end once, however often a stale read names the run again", async () => {
    const { runs, notices, reads, end } = watch();
    runs.follow("run-1");
    await runs.refresh(T0);
    expect(notices).toEqual([]);
    end();
    await runs.refresh(T0 + 1_000);
    expect(notices).toEqual(["Workflow demo completed (run-1)"]);
    // A claim or poll answered before the end still names the run.
    runs.follow("run-1");
    await runs.refresh(T0 + 2_000);
    expect(notices).toHaveLength(1);
    // Also after the finished widget is cleared.
    await runs.refresh(T0 + 120_000);
    runs.follow("run-1");
    await runs.refresh(T0 + 121_000);
    expect(notices).toHaveLength(1);
    expect(reads).toEqual(["run.status run-1", "run.status run-1"]);
  });

  it("reads only the attempts after the first open one, and draws what a whole read draws", async () => {
    const { table, payloads, runs, widget, start, end, whole } = pagedRun();

    runs.follow("run-1");
    start("s1");
    await runs.refresh(T0 + 1_000);
    expect(widget()).toEqual(whole(T0 + 1_000));
    for (let step = 2; step <= 30; step++) {
      end(step - 1);
      start(`s${step % 7}`);
      await runs.refresh(T0 + 1_000 + step);
      expect(widget()).toEqual(whole(T0 + 1_000 + step));
      // Only the step that ended and the one that started.
      expect(payloads.at(-1)).toMatchObject({ attemptsAfter: step - 2 });
    }
    // Two open at once (a running step beside a waiting one): read from the first open one.
    start("side");
    await runs.refresh(T0 + 2_000);
    end(31);
    await runs.refresh(T0 + 2_001);
    expect(payloads.at(-1)).toMatchObject({ attemptsAfter: 29 });
    expect(widget()).toEqual(whole(T0 + 2_001));
    // Past one page of attempts: the run's last ones, as a plain read.
    for (let i = 0; i < 80; i++) {
      end(table.length);
      start(`n${i % 12}`);
    }
    const reads = payloads.length;
    await runs.refresh(T0 + 3_000);
    expect(payloads.slice(reads)).toEqual([
      { includeUpdates: true, attemptsAfter: 29 },
      { includeUpdates: true },
    ]);
    expect(widget()).toEqual(whole(T0 + 3_000));
    await runs.refresh(T0 + 3_001);
    expect(payloads.at(-1)).toEqual({ includeUpdates: true });
  });

  it("reads an interrupted attempt again: the next worker can raise what it used", async () => {
    const { table, payloads, runs, widget, start, end, whole, setRoom } = pagedRun();
    runs.follow("run-1");
    start("plan");
    end(1);
    start("team");
    // An agent group's member killed after its model call: its usage went with the worker.
    Object.assign(table[1], { state: "interrupted", finishedAt: T0 + 9, usage: usage(1_000) });
    await runs.refresh(T0 + 1_000);
    expect(widget()).toEqual(whole(T0 + 1_000));
    expect(widget().join("\n")).toContain("1k tokens");
    // The next worker recovers the call's usage from the step's Pi session; over budget, the
    // run blocks before the step runs again.
    table[1].usage = usage(9_000);
    await runs.refresh(T0 + 1_001);
    expect(widget()).toEqual(whole(T0 + 1_001));
    expect(widget().join("\n")).toContain("9k tokens");
    expect(payloads.at(-1)).toMatchObject({ attemptsAfter: 1 });
    start("team");
    // Pages the host cut to its answer's bytes: the run's last ones, as a plain read draws.
    for (let i = 0; i < 6; i++) {
      end(table.length);
      start(`n${i}`);
    }
    setRoom(3 * 250);
    await runs.refresh(T0 + 2_000);
    expect(widget()).toEqual(whole(T0 + 2_000));
    expect(payloads.at(-1)).toEqual({ includeUpdates: true });
  });
});

function usage(tokens: number) {
  return {
    input: tokens,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    cost: null,
    provider: "p",
    model: "m",
  };
}

/**
 * A run's attempts behind the host's paging of run.status (run-queries.ts): the last 100, or the
 * first 100 after `attemptsAfter`, in sequence order, cut to the answer's room in bytes the way
 * the host cuts them (answer-budget.ts), with the run's attempt count.
 */
function pagedRun() {
  const table: AttemptSummary[] = [];
  const payloads: { attemptsAfter?: number }[] = [];
  let room = ANSWER_BUDGET_BYTES;
  const page = (after: number | undefined) =>
    after === undefined
      ? suffixWithin(table.slice(-100), room).items
      : prefixWithin(table.filter((a) => a.sequence > after).slice(0, 100), room).items;
  const client = {
    call: (_operation: string, options: { payload: { attemptsAfter?: number } }) => {
      payloads.push(options.payload);
      return Promise.resolve({
        run: summary("running"),
        attempts: structuredClone(page(options.payload.attemptsAfter)),
        attemptCount: table.length,
        updates: [],
      });
    },
  } as unknown as HostClient;
  let widget: string[] = [];
  const ui: PiUi = {
    notify: () => {},
    setStatus: () => {},
    setWidget: (_key, lines) => (widget = lines ?? []),
  };
  const runs = new RunWatch({
    pi: {} as PiExtensionApi,
    client,
    ui: () => ui,
    session: () => ({}) as PiSessionManager,
    detailFor: () => null,
  });
  const start = (nodeId: string) => {
    const sequence = table.length + 1;
    table.push({
      attemptId: `a-${sequence}`,
      nodeId,
      sequence,
      nodeKind: "agent",
      effect: "pure",
      state: "waiting",
      startedAt: T0 + sequence,
      deadlineAt: null,
    } as AttemptSummary);
  };
  const end = (sequence: number) => {
    Object.assign(table[sequence - 1], { state: "ok", finishedAt: T0 + sequence + 5 });
  };
  /** What a plain read draws. */
  const whole = (now: number) =>
    widgetLines({ run: summary("running"), attempts: page(undefined), details: {}, now });
  return {
    table,
    payloads,
    runs,
    widget: () => widget,
    start,
    end,
    whole,
    setRoom: (bytes: number) => (room = bytes),
  };
}
