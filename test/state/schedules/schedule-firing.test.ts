/**
 * Firing schedules on a virtual clock against a real SQLite file: a due slot is recorded with
 * the next slot in one transaction and started under a run id derived from schedule and slot;
 * the overlap policies (skip, queue: held behind the active run until it ends) and the catch-up
 * policies after a gap (none, latest, all-bounded at 10); a workflow that no longer loads fires
 * failed runs and pauses its schedule after 3; a cron in a zone fires once on both nights of a
 * daylight-saving change. The invariant checker runs after every step.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { checkInvariants } from "../../../src/state/invariants.ts";
import { readRun } from "../../../src/state/queries.ts";
import { queryAll } from "../../../src/state/statements.ts";
import {
  failFiring,
  fireDueSchedule,
  nextScheduleDue,
  pendingFirings,
  skipBeforeResolve,
  startFiring,
} from "../../../src/state/schedules/schedule-firing.ts";
import {
  findSchedule,
  pauseSchedule,
  removeSchedule,
  resumeSchedule,
  scheduleRunId,
} from "../../../src/state/schedules/schedule-records.ts";
import {
  type ScheduleInput,
  upsertSchedule,
} from "../../../src/state/schedules/schedule-upsert.ts";
import { latestFirings } from "../../../src/state/schedules/schedule-queries.ts";
import { nextLaunchableRuns } from "../../../src/state/transitions/run-launch.ts";
import { completeRun } from "../../../src/state/transitions/run-end.ts";
import { cancelRun } from "../../../src/state/transitions/run-commands.ts";
import { blockRun } from "../../../src/state/transitions/run-park.ts";
import { type Fixture, launch, openFixture } from "../../support/state-store.ts";
import { shortRunId, UUID_RUN_ID } from "../../../src/base/run-id-text.ts";

let f: Fixture;
beforeEach(() => {
  f = openFixture();
});
afterEach(() => f.close());

const MIN = 60_000;

function add(extra: Partial<ScheduleInput> = {}): string {
  return upsertSchedule(f.store, {
    name: "tick",
    workflow: "tick",
    workflowName: "tick",
    workflowRef: "/project/.pi/workflows/tick.workflow.ts",
    projectPath: "/project",
    timing: { kind: "every", everyMs: MIN },
    overlap: "skip",
    catchUp: "none",
    input: { n: 1 },
    inputHash: "sha256:in",
    workflowSource: { root: { kind: "builtin", id: "tick" }, mounted: [] },
    definitionDigest: "sha256:def",
    env: {},
    credentialNames: [],
    runSecretNames: [],
    pi: null,
    origin: "command",
    ...extra,
  }, { replace: true }).scheduleId;
}

const RUN = {
  workflowName: "tick",
  workflowRef: "/project/.pi/workflows/tick.workflow.ts",
  title: null,
  projectPath: "/project",
  workflowSource: { root: { kind: "builtin", id: "tick" }, mounted: [] },
  definitionDigest: "sha256:def",
  input: { n: 1 },
  inputHash: "sha256:in",
};

/** Moves the clock to the schedule's next slot (plus `late`) and fires it; returns its slots. */
function fireNext(id: string, late = 0): number[] {
  const next = nextScheduleDue(f.store)!;
  f.clock.set(next + late);
  return fireDueSchedule(f.store, id, f.clock.now());
}

function start(id: string, slotAt: number) {
  return startFiring(f.store, { scheduleId: id, slotAt, run: RUN });
}

function invariantsHold() {
  expect(checkInvariants(f.store)).toEqual([]);
}

describe("a due slot", () => {
  it("is recorded with the next slot in one step and started once under its derived id", () => {
    const id = add();
    const added = f.clock.now();
    expect(nextScheduleDue(f.store)).toBe(added + MIN);
    // Not due yet: nothing happens.
    expect(fireDueSchedule(f.store, id, added + MIN - 1)).toEqual([]);
    const [slot] = fireNext(id);
    expect(slot).toBe(added + MIN);
    expect(findSchedule(f.store, "tick")!.next_fire_at).toBe(added + 2 * MIN);
    // Applied again at the same instant (a timer retry): not due any more.
    expect(fireDueSchedule(f.store, id, f.clock.now())).toEqual([]);
    expect(pendingFirings(f.store)).toEqual([{ scheduleId: id, slotAt: slot }]);
    invariantsHold();
    const started = start(id, slot!);
    expect(started).toEqual({ outcome: "started", runId: scheduleRunId(id, slot!) });
    expect(readRun(f.store, scheduleRunId(id, slot!))?.state).toBe("queued");
    // A settle retried after a crash finds the firing settled and starts nothing.
    expect(start(id, slot!)).toEqual({ outcome: "settled" });
    expect(pendingFirings(f.store)).toEqual([]);
    invariantsHold();
  });

  it("starts its run under an id shaped like any run id, shown and typed the same way", () => {
    const id = add();
    const [first] = fireNext(id);
    const [second] = fireNext(id);
    const runId = scheduleRunId(id, first!);
    // `run-<uuid>`: text output abbreviates it to `run-1a2b3c4d` like every other run id.
    expect(runId).toMatch(UUID_RUN_ID);
    expect(shortRunId(runId)).toMatch(/^run-[0-9a-f]{8}$/);
    expect(scheduleRunId(id, first!)).toBe(runId);
    expect(scheduleRunId(id, second!)).not.toBe(runId);
    expect(shortRunId(scheduleRunId(id, second!))).not.toBe(shortRunId(runId));
    expect(start(id, first!)).toEqual({ outcome: "started", runId });
    invariantsHold();
    // doctor still finds a firing whose run is not its slot's.
    f.store.db.prepare("UPDATE schedule_firings SET run_id = ? WHERE slot_at = ?")
      .run(scheduleRunId(id, second!), first!);
    expect(checkInvariants(f.store).map((v) => v.code)).toContain("scheduleFiringRunId");
  });

  it("accepts a firing's run id of the earlier form (doctor stays clean after an upgrade)", () => {
    const id = add();
    const [slot] = fireNext(id);
    start(id, slot!);
    // Firings started before the digest named `run-<schedule id>-<slot ms>`.
    f.store.db.prepare("UPDATE schedule_firings SET run_id = ? WHERE slot_at = ?")
      .run(`run-${id}-${slot}`, slot!);
    expect(checkInvariants(f.store).map((v) => v.code)).not.toContain("scheduleFiringRunId");
  });
});

describe("overlap", () => {
  it("skip: starts nothing while the previous run is active, and again once it ended", () => {
    const id = add();
    const [first] = fireNext(id);
    const { runId } = start(id, first!) as { runId: string };
    const [second] = fireNext(id);
    // Queued counts as active too.
    expect(start(id, second!)).toEqual({ outcome: "skipped", reason: "overlap" });
    completeRun(f.store, launch(f.store, runId), { output: null });
    const [third] = fireNext(id);
    expect(start(id, third!).outcome).toBe("started");
    expect(latestFirings(f.store, id, 10).map((x) => x.state)).toEqual([
      "started",
      "skipped",
      "started",
    ]);
    invariantsHold();
  });

  it("skip: a slot is judged when it came, and skipped before its workflow is resolved", () => {
    const id = add({ timing: { kind: "every", everyMs: 1000 } });
    const [s1] = fireNext(id);
    // The next slot comes while the first is still being resolved (pending)...
    const [s2] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s1!)).toBeNull();
    f.clock.advance(300);
    const r1 = (start(id, s1!) as { runId: string }).runId;
    // ...and its run ends before the second slot's turn: the second still overlapped it.
    completeRun(f.store, launch(f.store, r1), { output: null });
    expect(skipBeforeResolve(f.store, id, s2!)).toEqual({ outcome: "skipped", reason: "overlap" });
    expect(skipBeforeResolve(f.store, id, s2!)).toEqual({ outcome: "settled" });
    // A slot that came after the run ended starts; one that comes while it is active is skipped.
    const [s3] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s3!)).toBeNull();
    expect(start(id, s3!).outcome).toBe("started");
    const [s4] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s4!)).toEqual({ outcome: "skipped", reason: "overlap" });
    expect(latestFirings(f.store, id, 10).map((x) => x.state)).toEqual([
      "skipped",
      "started",
      "skipped",
      "started",
    ]);
    invariantsHold();
  });

  it("skip: a run parked for a changed source does not keep its file from being loaded", () => {
    const id = add();
    const [s1] = fireNext(id);
    const r1 = (start(id, s1!) as { runId: string }).runId;
    const claim = launch(f.store, r1);
    // Its worker started after the file changed: parked, still active until resumed.
    blockRun(f.store, claim, { runId: r1, reason: "workflowSourceChanged", detail: "changed" });
    // Skipping early would never load the file: one that went would never fail a slot, and the
    // schedule would never pause itself.
    const [s2] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s2!)).toBeNull();
    const error = { code: "workflowNotFound", message: "Workflow not found" };
    expect(failFiring(f.store, { scheduleId: id, slotAt: s2!, error })).not.toBeNull();
    expect(findSchedule(f.store, "tick")!.load_failures).toBe(1);
    // A file that loads is still skipped once resolved: the parked run is active.
    const [s3] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s3!)).toBeNull();
    expect(start(id, s3!)).toEqual({ outcome: "skipped", reason: "overlap" });
    // Beside a run that is not parked, the slot is skipped before its resolution as before.
    cancelRun(f.store, { runId: r1, claim: null });
    const [s4] = fireNext(id);
    expect(start(id, s4!).outcome).toBe("started");
    const [s5] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s5!)).toEqual({ outcome: "skipped", reason: "overlap" });
    invariantsHold();
  });

  it("skip: a backlog of pending slots starts one run, not one per slot", () => {
    const id = add({ timing: { kind: "every", everyMs: 1000 } });
    const slots = [1, 2, 3, 4, 5].map(() => fireNext(id)[0]!);
    f.clock.advance(200);
    const outcomes = slots.map((slot) => {
      const early = skipBeforeResolve(f.store, id, slot);
      if (early) return early.outcome;
      const started = start(id, slot) as { outcome: string; runId: string };
      completeRun(f.store, launch(f.store, started.runId), { output: null });
      return started.outcome;
    });
    expect(outcomes).toEqual(["started", "skipped", "skipped", "skipped", "skipped"]);
    invariantsHold();
  });

  it("skip: a firing left pending by a failed settle holds back no later slot", () => {
    const id = add({ timing: { kind: "every", everyMs: 1000 } });
    // The first slot's settle threw (a locked database): its firing stays pending, retried later
    // or, retries given up, until the next host start. It is no run: the next slot starts.
    const [s1] = fireNext(id);
    const [s2] = fireNext(id);
    f.clock.advance(200);
    expect(skipBeforeResolve(f.store, id, s2!)).toBeNull();
    const r2 = (start(id, s2!) as { runId: string }).runId;
    completeRun(f.store, launch(f.store, r2), { output: null });
    // Nor does it hold back a slot after that run ended.
    const [s3] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s3!)).toBeNull();
    expect(start(id, s3!).outcome).toBe("started");
    // Its retry then finds that run active: skipped, not a second run at once.
    expect(skipBeforeResolve(f.store, id, s1!)).toEqual({ outcome: "skipped", reason: "overlap" });
    invariantsHold();
  });

  it("queue: a slot that came behind 11 runs (one running, 10 waiting or starting) is skipped", () => {
    const id = add({ overlap: "queue", timing: { kind: "every", everyMs: 1000 } });
    // 12 slots come while the first is being resolved (a loaded machine, a 1 s interval), and
    // each run ends before the next slot's turn: none is ever held, yet the twelfth came behind
    // 11 runs still to start, and is skipped without a resolution.
    const slots = Array.from({ length: 12 }, () => fireNext(id)[0]!);
    f.clock.advance(200);
    const outcomes = slots.map((slot) => {
      const early = skipBeforeResolve(f.store, id, slot);
      if (early) return early;
      const started = start(id, slot) as { outcome: string; runId: string };
      completeRun(f.store, launch(f.store, started.runId), { output: null });
      return started.outcome;
    });
    expect(outcomes).toEqual([
      ...Array(11).fill("started"),
      { outcome: "skipped", reason: "queueFull" },
    ]);
    invariantsHold();
  });

  it("queue: firings left pending by failed settles are no runs waiting", () => {
    const id = add({ overlap: "queue", timing: { kind: "every", everyMs: 1000 } });
    // 11 settles threw and were given up: pending until the next host start.
    for (let i = 0; i < 11; i++) fireNext(id);
    const [later] = fireNext(id);
    f.clock.advance(200);
    expect(skipBeforeResolve(f.store, id, later!)).toBeNull();
    expect(start(id, later!).outcome).toBe("started");
    invariantsHold();
  });

  it("cancel-previous: a slot a later slot came after before its resolution is skipped", () => {
    const id = add({ overlap: "cancel-previous", timing: { kind: "every", everyMs: 1000 } });
    const [s1] = fireNext(id);
    const [s2] = fireNext(id);
    // The later slot would cancel its run at once: it is never resolved nor started (nor is a
    // firing left pending by a failed settle, when its retry comes after a later slot: an older
    // slot's run never replaces a newer one's).
    expect(skipBeforeResolve(f.store, id, s1!)).toEqual({
      outcome: "skipped",
      reason: "superseded",
    });
    expect(skipBeforeResolve(f.store, id, s2!)).toBeNull();
    expect(start(id, s2!).outcome).toBe("started");
    invariantsHold();
  });

  it("cancel-previous: a slot resolved while a later one came starts after the cancel", () => {
    const id = add({ overlap: "cancel-previous", timing: { kind: "every", everyMs: 1000 } });
    const [s1] = fireNext(id);
    const r1 = (start(id, s1!) as { runId: string }).runId;
    const [s2] = fireNext(id);
    expect(skipBeforeResolve(f.store, id, s2!)).toBeNull();
    // The next slot comes during the second's resolution; the firer then cancels the first run,
    // and the second starts: skipped now, it would leave no run at all.
    const [s3] = fireNext(id);
    cancelRun(f.store, { runId: r1, claim: null });
    expect(start(id, s2!)).toEqual({ outcome: "started", runId: scheduleRunId(id, s2!) });
    // The third, with no later slot, is resolved in turn (and cancels the second's run).
    expect(skipBeforeResolve(f.store, id, s3!)).toBeNull();
    invariantsHold();
  });

  it("queue: holds the next run until the active one ends, then releases the oldest", () => {
    const id = add({ overlap: "queue" });
    const [s1] = fireNext(id);
    const r1 = (start(id, s1!) as { runId: string }).runId;
    const [s2] = fireNext(id);
    const [s3] = fireNext(id);
    expect(start(id, s2!)).toEqual({ outcome: "held", runId: scheduleRunId(id, s2!) });
    expect(start(id, s3!)).toEqual({ outcome: "held", runId: scheduleRunId(id, s3!) });
    // Only the active run itself can launch; the held ones wait.
    expect(nextLaunchableRuns(f.store, 10, f.clock.now()).map((r) => r.runId)).toEqual([r1]);
    invariantsHold();
    f.clock.advance(5_000);
    completeRun(f.store, launch(f.store, r1), { output: null });
    // The end released the oldest held run only, in the same commit.
    const launchable = nextLaunchableRuns(f.store, 10, f.clock.now()).map((r) => r.runId);
    expect(launchable).toEqual([scheduleRunId(id, s2!)]);
    invariantsHold();
    // Cancelling the released run lets the last one start.
    cancelRun(f.store, { runId: scheduleRunId(id, s2!), claim: null });
    expect(nextLaunchableRuns(f.store, 10, f.clock.now()).map((r) => r.runId))
      .toEqual([scheduleRunId(id, s3!)]);
    invariantsHold();
  });

  it("queue: a held run whose schedule is removed is released, not stranded", () => {
    const id = add({ overlap: "queue" });
    const [s1] = fireNext(id);
    const r1 = (start(id, s1!) as { runId: string }).runId;
    launch(f.store, r1);
    const [s2] = fireNext(id);
    start(id, s2!);
    removeSchedule(f.store, "tick");
    expect(nextLaunchableRuns(f.store, 10, f.clock.now()).map((r) => r.runId))
      .toEqual([scheduleRunId(id, s2!)]);
    invariantsHold();
  });

  it("queue: holds at most 10 runs; later slots are skipped", () => {
    const id = add({ overlap: "queue" });
    const [s1] = fireNext(id);
    launch(f.store, (start(id, s1!) as { runId: string }).runId);
    const outcomes = [];
    for (let i = 0; i < 11; i++) outcomes.push(start(id, fireNext(id)[0]!).outcome);
    expect(outcomes.filter((o) => o === "held")).toHaveLength(10);
    expect(outcomes.at(-1)).toBe("skipped");
    invariantsHold();
  });
});

describe("catch-up after the host was down", () => {
  const EVERY = 10 * MIN;
  /** A host down from before the first slot until 2 minutes after slot number `missed + 1`. */
  const gap = (catchUp: "none" | "latest" | "all-bounded", missed: number) => {
    const id = add({ catchUp, timing: { kind: "every", everyMs: EVERY } });
    const due = nextScheduleDue(f.store)!;
    f.clock.set(due + missed * EVERY + 2 * MIN);
    return { id, due, fired: fireDueSchedule(f.store, id, f.clock.now()) };
  };

  it("none: starts nothing for the missed slots and goes on from the next one", () => {
    const { fired } = gap("none", 5);
    expect(fired).toEqual([]);
    const row = findSchedule(f.store, "tick")!;
    expect(row.missed_slots).toBe(6);
    expect(row.next_fire_at).toBeGreaterThan(f.clock.now());
    invariantsHold();
  });

  it("none: a slot applied a little late still fires", () => {
    const id = add({ timing: { kind: "every", everyMs: EVERY } });
    expect(fireNext(id, 50_000)).toHaveLength(1);
    expect(fireNext(id, 70_000)).toHaveLength(0);
  });

  it("latest: one run, for the newest missed slot", () => {
    const { fired, due } = gap("latest", 5);
    expect(fired).toEqual([due + 5 * EVERY]);
    expect(findSchedule(f.store, "tick")!.missed_slots).toBe(5);
    invariantsHold();
  });

  it("all-bounded: one run per missed slot, the newest 10 at most", () => {
    const { fired, due } = gap("all-bounded", 14);
    expect(fired).toHaveLength(10);
    expect(fired.at(-1)).toBe(due + 14 * EVERY);
    expect(findSchedule(f.store, "tick")!.missed_slots).toBe(5);
    expect(pendingFirings(f.store)).toHaveLength(10);
    invariantsHold();
  });
});

describe("a workflow that no longer loads", () => {
  it("fires failed runs with the load error and pauses the schedule after 3", () => {
    const id = add();
    const error = { code: "workflowNotFound", message: "Workflow not found: tick" };
    for (let i = 1; i <= 3; i++) {
      const [slot] = fireNext(id);
      const failed = failFiring(f.store, { scheduleId: id, slotAt: slot!, error });
      expect(failed).toEqual({ runId: scheduleRunId(id, slot!), paused: i === 3 });
      const run = readRun(f.store, failed!.runId)!;
      expect(run.state).toBe("failed");
      expect(run.error).toMatchObject(error);
      invariantsHold();
    }
    const row = findSchedule(f.store, "tick")!;
    expect(row.paused).toBe(1);
    expect(row.next_fire_at).toBeNull();
    expect(row.paused_reason).toMatch(/failed to load 3 times in a row: Workflow not found/);
    expect(nextScheduleDue(f.store)).toBeNull();
    // Resumed (the file is back): fires again from the next slot, failures forgotten.
    resumeSchedule(f.store, "tick");
    expect(findSchedule(f.store, "tick")!.load_failures).toBe(0);
    const [slot] = fireNext(id);
    expect(start(id, slot!).outcome).toBe("started");
    invariantsHold();
  });

  it("a load that works again resets the count", () => {
    const id = add();
    const error = { code: "invalidDefinition", message: "Invalid workflow definition" };
    failFiring(f.store, { scheduleId: id, slotAt: fireNext(id)[0]!, error });
    failFiring(f.store, { scheduleId: id, slotAt: fireNext(id)[0]!, error });
    start(id, fireNext(id)[0]!);
    expect(findSchedule(f.store, "tick")!.load_failures).toBe(0);
    failFiring(f.store, { scheduleId: id, slotAt: fireNext(id)[0]!, error });
    expect(findSchedule(f.store, "tick")!.paused).toBe(0);
  });
});

describe("pause and resume", () => {
  it("a paused schedule has no next slot and misses its slots; resume goes on from now", () => {
    const id = add();
    pauseSchedule(f.store, "tick");
    expect(nextScheduleDue(f.store)).toBeNull();
    f.clock.advance(10 * MIN);
    expect(fireDueSchedule(f.store, id, f.clock.now())).toEqual([]);
    resumeSchedule(f.store, "tick");
    expect(nextScheduleDue(f.store)).toBeGreaterThan(f.clock.now());
    invariantsHold();
  });
});

describe("a cron in a zone across daylight-saving changes", () => {
  /** Fires every slot from `from` to `to`, applying each exactly at its time. */
  function fireThrough(id: string, to: string): string[] {
    const fired: string[] = [];
    for (;;) {
      const next = nextScheduleDue(f.store)!;
      if (next > Date.parse(to)) return fired;
      f.clock.set(next);
      for (const slot of fireDueSchedule(f.store, id, next)) {
        fired.push(new Date(slot).toISOString());
      }
    }
  }

  it("fires 02:30 Berlin once in the night the hour is skipped and once when it repeats", () => {
    f.clock.set(Date.parse("2026-03-27T12:00:00Z"));
    const id = add({ timing: { kind: "cron", cron: "30 2 * * *", timeZone: "Europe/Berlin" } });
    expect(fireThrough(id, "2026-03-30T12:00:00Z")).toEqual([
      "2026-03-28T01:30:00.000Z",
      "2026-03-29T01:00:00.000Z",
      "2026-03-30T00:30:00.000Z",
    ]);
    f.clock.set(Date.parse("2026-10-23T12:00:00Z"));
    resumeSchedule(f.store, pauseSchedule(f.store, "tick").name);
    expect(fireThrough(id, "2026-10-26T12:00:00Z")).toEqual([
      "2026-10-24T00:30:00.000Z",
      "2026-10-25T00:30:00.000Z",
      "2026-10-26T01:30:00.000Z",
    ]);
    expect(
      queryAll(f.store, "SELECT COUNT(*) AS n FROM schedule_firings")[0],
    ).toEqual({ n: 6 });
    invariantsHold();
  });
});
