/**
 * A schedule's firing across host deaths, with the real `host run`: a host SIGKILLed inside the
 * transaction that records a due slot, just after it, after the workflow was resolved, and inside
 * the transaction that starts the slot's run. Each time the next host fires that slot exactly
 * once: one firing, one run under the id derived from schedule and slot, which completes; and
 * the state stays consistent. And a resolver child killed while it loads a slot's workflow: the
 * slot is resolved again, not recorded as a load failure; a workflow that exits at every load is
 * resolved once more per slot, then recorded failed, and the schedule pauses after 3; a host
 * stopped during that retry records no failure.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { scheduleRunId } from "../../src/state/schedules/schedule-records.ts";
import {
  type CliProcess,
  hostRequest,
  killAll,
  RawClient,
  spawnCli,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

afterEach(killAll);

const TICK = `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "tick",
  startAt: "a",
  nodes: { a: compute({ run: ({ input }) => ({ ticked: input }) }) },
});
`;

async function startHost(env: NodeJS.ProcessEnv): Promise<CliProcess> {
  const host = await waitFor<CliProcess | null>(
    async () => {
      const host = spawnCli(["host", "run"], env);
      const ready = await Promise.race([
        host.waitForStderr("host.ready", 30_000).then(() => true),
        host.exited.then(() => false),
      ]).catch(() => false);
      return ready ? host : null;
    },
    "a host to start",
    60_000,
    200,
  );
  return host!;
}

interface Firing {
  slot_at: number;
  state: string;
  run_id: string | null;
  schedule_id: string;
  run_state: string | null;
}

/** `read` on a read-only connection to the home's state, closed after. */
function readState<T>(home: TempHome, read: (store: StateStore) => T): T {
  const store = openStateStore({
    stateDir: home.stateDir,
    clock: systemClock,
    ids: randomIds,
    readOnly: true,
  });
  try {
    return read(store);
  } finally {
    closeStateStore(store);
  }
}

function firings(home: TempHome): { rows: Firing[]; invariants: unknown[] } {
  return readState(home, (store) => ({
    rows: queryAll<Firing>(
      store,
      "SELECT f.slot_at, f.state, f.run_id, f.schedule_id, r.state AS run_state " +
        "FROM schedule_firings f LEFT JOIN runs r ON r.run_id = f.run_id ORDER BY f.slot_at",
    ),
    invariants: checkInvariants(store),
  }));
}

/** Adds a schedule through the host's socket; its receipt once accepted. */
async function addSchedule(home: TempHome, payload: Record<string, unknown>) {
  const client = await RawClient.connect(home.socketPath);
  try {
    const added = await client.request(hostRequest("schedule.add", { payload }), 60_000);
    expect(added.outcome).toBe("accepted");
    return added.receipt;
  } finally {
    client.close();
  }
}

/** A project holding `file` with `source`, and a counter of the workflow's loads beside it. */
function loadCountedProject(home: TempHome, file: string, source: (loads: string) => string) {
  const project = join(home.root, "project");
  mkdirSync(project, { recursive: true });
  const loads = join(home.root, "loads.log");
  writeFileSync(join(project, file), source(loads));
  return {
    project,
    loadCount: () => readFileSync(loads, "utf8").split("\n").filter(Boolean).length,
  };
}

describe("a schedule's firing across host deaths", () => {
  for (
    const point of [
      "host.schedule.fired.beforeCommit",
      "host.schedule.fired.afterCommit",
      "host.schedule.resolved",
      "host.schedule.started.beforeCommit",
    ]
  ) {
    it(`SIGKILL at ${point}: the slot fires exactly once after the restart`, async () => {
      // The default host lease (15 s): the next host takes over at once from the SIGKILLed one,
      // its process being gone. A 1.5 s lease lapsed in a loaded pause and stopped the next host
      // itself (`host.claimLost reason=expired`) with the slot's run left running.
      const home = tempHome({ PI_WORKFLOWS_CRASH_AT: point });
      const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
      const project = join(home.root, "project");
      mkdirSync(project, { recursive: true });
      writeFileSync(join(project, "tick.workflow.ts"), TICK);
      try {
        const first = await startHost(env);
        // Every 3s; a restart that takes longer than a slot still fires the crashed slot (the
        // newest 10 missed slots are caught up).
        const receipt = await addSchedule(home, {
          name: "tick",
          workflow: "./tick.workflow.ts",
          cwd: project,
          every: "3s",
          catchUp: "all-bounded",
          overlap: "queue",
          input: { n: 1 },
        });
        const firstSlot = receipt.schedule.nextFireAt as number;
        expect(await first.exited).toMatchObject({ signal: "SIGKILL" });
        const dead = firings(home);
        expect(dead.invariants).toEqual([]);
        // Killed inside the recording transaction: nothing of the slot is left.
        if (point === "host.schedule.fired.beforeCommit") expect(dead.rows).toEqual([]);
        else expect(dead.rows[0]).toMatchObject({ slot_at: firstSlot, state: "pending" });

        const second = await startHost(env);
        const done = await waitFor(
          () => {
            const { rows } = firings(home);
            const slot = rows.find((r) => r.slot_at === firstSlot);
            return slot?.run_state === "completed" ? rows : null;
          },
          "the crashed slot's run to complete",
          90_000,
          200,
        );
        await stopProcess(second);
        const after = firings(home);
        expect(after.invariants).toEqual([]);
        const slot = after.rows.filter((r) => r.slot_at === firstSlot);
        expect(slot).toEqual([
          expect.objectContaining({
            state: "started",
            run_id: scheduleRunId(String(slot[0]!.schedule_id), firstSlot),
          }),
        ]);
        // One run per started slot, never two firings of one slot (the key says so too).
        const started = after.rows.filter((r) => r.run_id !== null).map((r) => r.run_id);
        expect(new Set(started).size).toBe(started.length);
        expect(done!.length).toBeGreaterThan(0);
      } finally {
        await home.cleanup();
      }
    }, 240_000);
  }
});

/**
 * A workflow whose second load SIGKILLs the process loading it: the first is `schedule.add`'s
 * resolver, the second the first slot's (then the slot's worker, and so on).
 */
const SECOND_LOAD_DIES = (loads: string) =>
  `import { appendFileSync, readFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
appendFileSync(${JSON.stringify(loads)}, "load\\n");
if (readFileSync(${JSON.stringify(loads)}, "utf8").length === "load\\n".length * 2) {
  process.kill(process.pid, "SIGKILL");
}
export default defineWorkflow({
  name: "tick",
  startAt: "a",
  nodes: { a: compute({ run: ({ input }) => ({ ticked: input }) }) },
});
`;

describe("a schedule's resolver killed", () => {
  it("resolves the slot again: its run starts and completes, no load failure", async () => {
    const home = tempHome();
    const { project, loadCount } = loadCountedProject(home, "tick.workflow.ts", SECOND_LOAD_DIES);
    try {
      const host = await startHost(home.env);
      // `queue`: a later slot's run cannot make the retried slot skip.
      const receipt = await addSchedule(home, {
        name: "tick",
        workflow: "./tick.workflow.ts",
        cwd: project,
        every: "3s",
        overlap: "queue",
      });
      const firstSlot = receipt.schedule.nextFireAt as number;
      const settled = await waitFor(
        () => {
          const slot = firings(home).rows.find((r) => r.slot_at === firstSlot);
          return slot && slot.state !== "pending" && slot.run_state !== "queued" &&
              slot.run_state !== "running"
            ? slot
            : null;
        },
        "the first slot to be settled and its run to end",
        60_000,
        100,
      );
      await stopProcess(host);
      expect(settled).toMatchObject({ state: "started", run_state: "completed" });
      // The slot's resolver died (the second load), and the slot was resolved again.
      expect(loadCount()).toBeGreaterThan(2);
      expect(firings(home).rows.filter((r) => r.state === "failed")).toEqual([]);
      expect(firings(home).invariants).toEqual([]);
    } finally {
      await home.cleanup();
    }
  }, 120_000);
});

/** A workflow that exits at every load but the first (`schedule.add`'s). */
const EXITS_AT_LOAD = (loads: string) =>
  `import { appendFileSync, readFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
appendFileSync(${JSON.stringify(loads)}, "load\\n");
if (readFileSync(${JSON.stringify(loads)}, "utf8").length > "load\\n".length) process.exit(1);
export default defineWorkflow({
  name: "exits",
  startAt: "a",
  nodes: { a: compute({ run: () => "never" }) },
});
`;

describe("a schedule whose workflow exits at every load", () => {
  it("retries each slot's resolver once, then fails the slot; pauses after 3", async () => {
    const home = tempHome();
    const { project, loadCount } = loadCountedProject(home, "exits.workflow.ts", EXITS_AT_LOAD);
    const schedule = () =>
      readState(home, (store) =>
        queryAll<{ paused: number; paused_reason: string | null }>(
          store,
          "SELECT paused, paused_reason FROM schedules",
        )[0]);
    try {
      const host = await startHost(home.env);
      await addSchedule(home, {
        name: "exits",
        workflow: "./exits.workflow.ts",
        cwd: project,
        every: "1s",
      });
      // Before, each slot was resolved 11 times over ~150 s before it counted. Only the pause is
      // waited for: slots keep coming while each takes two serial resolutions, so a backlog
      // settled to the end grows with the load.
      const paused = await waitFor(
        () => {
          const row = schedule();
          return row?.paused === 1 ? row : null;
        },
        "the schedule to pause",
        60_000,
        100,
      );
      await stopProcess(host);
      expect(paused!.paused_reason).toMatch(/failed to load 3 times in a row: /);
      const { rows, invariants } = firings(home);
      const failed = rows.filter((r) => r.state === "failed");
      expect(failed.length).toBeGreaterThanOrEqual(3);
      // The stop records no failure: a firing not failed by then is left pending.
      expect(rows.filter((r) => r.state !== "failed" && r.state !== "pending")).toEqual([]);
      // add's load, then two per failed slot (its resolver and the one retry); a pending slot
      // had at most two when the host stopped.
      const loads = loadCount();
      expect(loads).toBeGreaterThanOrEqual(1 + 2 * failed.length);
      expect(loads).toBeLessThanOrEqual(1 + 2 * rows.length);
      expect(invariants).toEqual([]);
    } finally {
      await home.cleanup();
    }
  }, 90_000);
});

/**
 * A workflow whose second load (the first slot's resolver) exits and whose third (the retry)
 * hangs: the host is stopped while the retry's resolver loads it.
 */
const EXITS_THEN_HANGS = (loads: string) =>
  `import { appendFileSync, readFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
appendFileSync(${JSON.stringify(loads)}, "load\\n");
const count = readFileSync(${JSON.stringify(loads)}, "utf8").length / "load\\n".length;
if (count === 2) process.exit(1);
if (count === 3) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000);
export default defineWorkflow({
  name: "hangs",
  startAt: "a",
  nodes: { a: compute({ run: () => "done" }) },
});
`;

describe("a host stopped while a slot's resolver is retried", () => {
  it("records no load failure: the firing stays pending for the next host", async () => {
    const home = tempHome();
    const { project, loadCount } = loadCountedProject(home, "hangs.workflow.ts", EXITS_THEN_HANGS);
    try {
      const host = await startHost(home.env);
      await addSchedule(home, {
        name: "hangs",
        workflow: "./hangs.workflow.ts",
        cwd: project,
        every: "5s",
      });
      // The retry joins the queue behind the slots recorded meanwhile: 5 s apart, the first
      // slot's retry (0.5 s after its resolver died) is queued before the second slot comes, so
      // the third load is that retry. One firing row when it loads says so; two would mean the
      // third load may be the second slot's first resolution, which proves nothing.
      await waitFor(
        () => loadCount() >= 3,
        "the retry's resolver to load the workflow",
        60_000,
        50,
      );
      expect(firings(home).rows).toHaveLength(1);
      await stopProcess(host);
      const { rows, invariants } = firings(home);
      expect(rows.length).toBeGreaterThan(0);
      expect(rows.filter((r) => r.state !== "pending")).toEqual([]);
      expect(invariants).toEqual([]);
    } finally {
      await home.cleanup();
    }
  }, 90_000);
});
