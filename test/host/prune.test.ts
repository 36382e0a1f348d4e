/**
 * `pi-workflows prune` against a real host over its socket: counts and bytes, a dry run that
 * changes nothing, bad input refused, the retention period from config.json, the idle host
 * pruning by itself, and a host SIGKILLed in the middle of a prune (inside a run's deletion and
 * between transactions): afterwards every run is whole, marked (gone to every reader) or gone,
 * doctor is clean, and the next pass finishes the marked ones. Controller history past the period
 * goes too, with its worker epochs' output files.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { listRuns, readRunStatus } from "../../src/state/queries.ts";
import { DAY_MS } from "../../src/state/retention/retention-pass.ts";
import { BATCH_ROWS } from "../../src/state/retention/run-marks.ts";
import { stepOutputStem } from "../../src/base/step-output-files.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { endedRun, startRun } from "../support/ended-runs.ts";
import { recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";
import { withSeedHost } from "../state/seed-host.ts";
import {
  hostRequest,
  killAll,
  requestOnce,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

let home: TempHome | undefined;
afterEach(async () => {
  await killAll();
  await home?.cleanup();
  home = undefined;
});

/**
 * `old` runs that ended 40 days ago and `young` ones that ended 2 days ago; the first old one
 * with `attempts` attempts (default 2).
 */
function seed(
  stateDir: string,
  old: number,
  young: number,
  attempts = 2,
): { old: string[]; young: string[] } {
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = openStateStore({ stateDir, clock, ids: sequentialIds() });
  store.db.exec("PRAGMA synchronous = OFF");
  try {
    return withSeedHost(store, (hostEpoch) => {
      const oldRuns = Array.from(
        { length: old },
        (_, i) => endedRun(store, { hostEpoch, attempts: i === 0 ? attempts : 2 }),
      );
      clock.advance(38 * DAY_MS);
      const youngRuns = Array.from({ length: young }, () => endedRun(store, { hostEpoch }));
      return { old: oldRuns, young: youngRuns };
    });
  } finally {
    closeStateStore(store);
  }
}

/**
 * A run started 40 days ago and waiting since at a checkpoint that times out in an hour: a
 * pending deadline, which keeps the host up (it is never idle enough to exit) until then.
 */
function seedWaitingRun(stateDir: string): string {
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const ids = sequentialIds();
  // Ids of their own: the seeded ended runs took the sequence's first ones.
  const store = openStateStore({
    stateDir,
    clock,
    ids: { next: (prefix) => `waiting-${ids.next(prefix)}`, token: ids.token },
  });
  try {
    return withSeedHost(store, (hostEpoch) => {
      const { runId, claim, epoch } = startRun(store, { hostEpoch });
      const attemptId = store.ids.next("attempt");
      recordNodeStarted(store, claim, {
        attemptId,
        nodeId: "review",
        nodeKind: "checkpoint",
        effect: "pure",
        deadlineAt: Date.now() + 3600_000,
      });
      waitRun(store, claim, {
        attemptId,
        nodeId: "review",
        kind: "checkpoint",
        request: { title: "Go on?", subject: "s" },
      });
      finishWorkerEpoch(store, {
        workerEpoch: epoch,
        status: "exited",
        exitCode: 0,
        signal: null,
        diagnosticHash: null,
      });
      return runId;
    });
  } finally {
    closeStateStore(store);
  }
}

/** Runs `fn` on a read-only store of `stateDir`, closed after. */
function readStore<T>(stateDir: string, fn: (store: StateStore) => T): T {
  const store = openStateStore({
    stateDir,
    clock: new FakeClock(),
    ids: sequentialIds(),
    readOnly: true,
  });
  try {
    return fn(store);
  } finally {
    closeStateStore(store);
  }
}

/** Tables a prune deletes a run's rows from (runRows counts them in this order). */
const RUN_TABLES = [
  "runs",
  "run_queue",
  "events",
  "node_attempts",
  "node_updates",
  "effects",
  "notifications",
  "turn_intents",
  "human_decisions",
  "host_commands",
  "leases",
  "run_bindings",
];

/** Per run: its rows in the tables a prune deletes (0 everywhere once it is gone). */
function runRows(stateDir: string, runIds: string[]): Map<string, string> {
  return readStore(stateDir, (store) => {
    return new Map(runIds.map((id) => [
      id,
      RUN_TABLES.map((t) =>
        (store.db.prepare(`SELECT COUNT(*) AS n FROM ${t} WHERE run_id = ?`).get(id) as {
          n: number;
        }).n
      ).join(","),
    ]));
  });
}

/**
 * The run's output files a prune removes: its workers' captured output (named by the epochs,
 * which compaction keeps for it), its steps' output and its headless Pi sessions.
 */
function writeOutputFiles(stateDir: string, runId: string): string[] {
  return readStore(stateDir, (store) => {
    const attempts = store.db.prepare("SELECT attempt_id FROM node_attempts WHERE run_id = ?")
      .all(runId) as { attempt_id: string }[];
    expect(attempts.length).toBeGreaterThan(0);
    const epochs = store.db.prepare("SELECT worker_epoch FROM run_workers WHERE run_id = ?")
      .all(runId) as { worker_epoch: string }[];
    expect(epochs.length).toBeGreaterThan(0);
    const workers = join(stateDir, "workers");
    mkdirSync(workers, { recursive: true });
    const files = [
      ...epochs.flatMap((e) => [
        join(workers, `${e.worker_epoch.replace(/[^A-Za-z0-9_.-]/g, "_")}.out`),
        join(workers, `${e.worker_epoch.replace(/[^A-Za-z0-9_.-]/g, "_")}-pi1.err`),
      ]),
      ...attempts.flatMap((a) => [
        join(workers, `${stepOutputStem(a.attempt_id)}.0.out`),
        join(workers, `${stepOutputStem(a.attempt_id)}.1.err`),
      ]),
      join(stateDir, "sessions", runId, "run.jsonl"),
    ];
    mkdirSync(join(stateDir, "sessions", runId), { recursive: true });
    for (const file of files) writeFileSync(file, "output\n");
    return files;
  });
}

/**
 * A controller's history 40 days old (two ended worker epochs, 25 events of one resource) and a
 * young epoch (2 days), each epoch with its captured output file; returns the epochs in order.
 */
function seedControllerHistory(stateDir: string): string[] {
  const clock = new FakeClock(Date.now() - 40 * DAY_MS);
  const store = openStateStore({ stateDir, clock, ids: sequentialIds() });
  try {
    const now = clock.now();
    store.db.prepare(
      "INSERT INTO controllers (controller_id, project_path, name, source_ref, source_json, " +
        "source_digest, timeout_ms, revision, created_at, updated_at) VALUES ('c1', '/p', 'c', " +
        "'r', '{}', 'd', 1000, 1, ?, ?)",
    ).run(now, now);
    store.db.prepare(
      "INSERT INTO controller_resources (uid, controller_id, resource_key, resource_version, " +
        "generation, spec_json, status_json, finalizers_json, created_at, updated_at) VALUES " +
        "('u1', 'c1', 'k', 25, 1, '{}', '{}', '[]', ?, ?)",
    ).run(now, now);
    store.db.prepare(
      "INSERT INTO controller_queue (uid, pending, available_at, version, consecutive_errors, " +
        "updated_at) VALUES ('u1', 0, ?, 1, 0, ?)",
    ).run(now, now);
    for (let v = 1; v <= 25; v++) {
      store.db.prepare(
        "INSERT INTO controller_events (uid, resource_version, type, payload_json, at) VALUES " +
          "('u1', ?, 'reconciled', '{}', ?)",
      ).run(v, now + v);
    }
    const epoch = store.db.prepare(
      "INSERT INTO controller_workers (worker_epoch, controller_id, source_digest, status, " +
        "started_at, finished_at, exit_code) VALUES (?, 'c1', 'd', 'exited', ?, ?, 0)",
    );
    epoch.run("cwep-1", now, now + 1000);
    epoch.run("cwep-2", now + 2000, now + 3000);
    epoch.run("cwep-3", now + 38 * DAY_MS, now + 38 * DAY_MS + 1000);
  } finally {
    closeStateStore(store);
  }
  const epochs = ["cwep-1", "cwep-2", "cwep-3"];
  mkdirSync(join(stateDir, "workers"), { recursive: true });
  for (const e of epochs) writeFileSync(join(stateDir, "workers", `${e}.out`), "output\n");
  return epochs;
}

function doctorClean(stateDir: string): void {
  return readStore(stateDir, (store) => {
    expect(checkInvariants(store)).toEqual([]);
  });
}

const GONE = "0,0,0,0,0,0,0,0,0,0,0,0";

describe("pi-workflows prune", () => {
  it("reports, prunes through the host, refuses bad input, and leaves doctor clean", async () => {
    home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
    const runs = seed(home.stateDir, 6, 2);
    const before = runRows(home.stateDir, [...runs.old, ...runs.young]);
    const outputFiles = writeOutputFiles(home.stateDir, runs.old[0]!);
    const otherStep = join(
      home.stateDir,
      "workers",
      `${stepOutputStem("not-a-pruned-attempt")}.0.out`,
    );
    writeFileSync(otherStep, "kept\n");
    // The idle host's own pass (at once, then every 6 hours) keeps 100 days: it takes nothing.
    writeFileSync(join(home.stateDir, "config.json"), JSON.stringify({ retention: { days: 100 } }));
    const host = await startHostProcess(home.env);
    // Its pass before any command, so none of this test's periods reaches an idle pass.
    await host.waitForStderr("retention.pass source=idle runs=0 ", 20_000);

    const dry = await runCliProcess(
      ["prune", "--keep-days", "30", "--dry-run", "--json"],
      home.env,
      60_000,
    );
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({ dryRun: true, keepDays: 30, runs: 6 });
    expect(runRows(home.stateDir, runs.old)).toEqual(
      new Map(runs.old.map((id) => [id, before.get(id)])),
    );

    // One bad period end to end (the others: test/cli/parse-command.test.ts).
    const refused = await runCliProcess(["prune", "--keep-days", "-1"], home.env, 60_000);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--keep-days/);
    writeFileSync(join(home.stateDir, "config.json"), JSON.stringify({ retention: { days: -3 } }));
    const badConfig = await runCliProcess(["prune"], home.env, 60_000);
    expect(badConfig.code).toBe(3);
    expect(badConfig.stderr).toMatch(/config\.json.*retention/);
    writeFileSync(join(home.stateDir, "config.json"), JSON.stringify({ retention: { days: 1 } }));

    const pruned = await runCliProcess(["prune"], home.env, 60_000);
    expect(pruned.code).toBe(0);
    // config.json's period (1 day): the young runs (2 days) go too.
    expect(pruned.stdout).toMatch(/^Removed 8 ended runs older than 1 day \(\d/);
    expect(pruned.stdout).toMatch(/state\.sqlite .* -> /);
    expect(outputFiles.filter((file) => existsSync(file))).toEqual([]);
    expect(existsSync(otherStep)).toBe(true);
    await stopProcess(host);
    for (const [, rows] of runRows(home.stateDir, [...runs.old, ...runs.young])) {
      expect(rows).toBe(GONE);
    }
    doctorClean(home.stateDir);
    const doctor = await runCliProcess(["doctor"], home.env, 60_000);
    expect(doctor.code).toBe(0);
  });

  it("prunes controller history: a dry run and --json count it, the prune removes it and the epochs' output", async () => {
    home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
    const epochs = seedControllerHistory(home.stateDir);
    writeFileSync(join(home.stateDir, "config.json"), JSON.stringify({ retention: { days: 100 } }));
    const host = await startHostProcess(home.env);
    await host.waitForStderr("retention.pass source=idle runs=0 ", 20_000);
    const dry = await runCliProcess(
      ["prune", "--keep-days", "30", "--dry-run", "--json"],
      home.env,
      60_000,
    );
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout).rows).toEqual({ controller_events: 5, controller_workers: 2 });
    const pruned = await runCliProcess(["prune", "--keep-days", "30"], home.env, 60_000);
    expect(pruned.code).toBe(0);
    expect(pruned.stdout).toMatch(
      /^Removed 5 controller events and 2 controller worker epochs older than 30 days \(.*\), no ended runs\n/,
    );
    expect(pruned.stdout).toMatch(/rows: controller_events 5, controller_workers 2/);
    const output = (e: string) => existsSync(join(home!.stateDir, "workers", `${e}.out`));
    expect(epochs.filter(output)).toEqual(["cwep-3"]);
    await stopProcess(host);
    readStore(home.stateDir, (store) => {
      expect(store.db.prepare("SELECT COUNT(*) AS n FROM controller_events").get()).toEqual({
        n: 20,
      });
      expect(
        store.db.prepare("SELECT worker_epoch FROM controller_workers").all().map((r) => ({
          ...r,
        })),
      ).toEqual([{ worker_epoch: "cwep-3" }]);
    });
    doctorClean(home.stateDir);
    const doctor = await runCliProcess(["doctor"], home.env, 60_000);
    expect(doctor.code).toBe(0);
  });

  it("prunes by itself while idle, and still exits idle", async () => {
    home = tempHome({
      // Long enough for the pass to finish on a loaded machine before the idle exit.
      PI_WORKFLOWS_HOST_IDLE_MS: "8000",
      PI_WORKFLOWS_RETENTION_INTERVAL_MS: "60000",
    });
    const runs = seed(home.stateDir, 4, 1);
    const host = await startHostProcess(home.env);
    await host.waitForStderr("retention.pass", 20_000);
    const { code } = await host.exited;
    expect(code).toBe(0);
    expect(host.stderr()).toMatch(/retention\.pass source=idle runs=4 /);
    const rows = runRows(home.stateDir, [...runs.old, ...runs.young]);
    for (const id of runs.old) expect(rows.get(id)).toBe(GONE);
    expect(rows.get(runs.young[0])).not.toBe(GONE);
    doctorClean(home.stateDir);
  });

  it("prunes by itself while a pending deadline keeps it up, and leaves the waiting run whole", async () => {
    // The waiting run's deadline (an hour away) keeps the host from exiting idle; no client and
    // no worker: the host has nothing to do until then, so its idle pass runs.
    home = tempHome({
      PI_WORKFLOWS_HOST_IDLE_MS: "1000",
      PI_WORKFLOWS_RETENTION_INTERVAL_MS: "60000",
    });
    const runs = seed(home.stateDir, 3, 1);
    const waiting = seedWaitingRun(home.stateDir);
    const before = runRows(home.stateDir, [waiting]);
    const host = await startHostProcess(home.env);
    await host.waitForStderr("retention.pass source=idle runs=3 ", 20_000);
    expect(host.stderr()).not.toMatch(/host\.stopping/);
    await stopProcess(host);
    const rows = runRows(home.stateDir, [...runs.old, ...runs.young, waiting]);
    for (const id of runs.old) expect(rows.get(id)).toBe(GONE);
    expect(rows.get(runs.young[0])).not.toBe(GONE);
    expect(rows.get(waiting)).toBe(before.get(waiting));
    expect(readStore(home.stateDir, (store) => readRunStatus(store, waiting)?.run.state)).toBe(
      "waiting",
    );
    doctorClean(home.stateDir);
  });

  // Inside a run's deletion (the transaction rolled back) after the first prune transaction
  // committed, and between two transactions of a run of 1,500 attempts (~9,000 rows, several
  // transactions): marked and half deleted. The point counts each batch of a run's events the
  // prune deletes (one a small run here); the first transaction takes at most 7 runs (its frame
  // budget, 512, over the 70 frames a run is taken to write until measured), so the ninth batch
  // lies in a later transaction than the first.
  for (const point of ["state.retention.runHalfDeleted#9", "host.retention.step#2"]) {
    it(`leaves every run whole, marked or gone when the host is SIGKILLed, and the next pass ends them (${point})`, async () => {
      home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
      const large = point.startsWith("host.");
      const runs = seed(home.stateDir, 40, 2, large ? 1500 : 2);
      const all = [...runs.old, ...runs.young];
      const before = runRows(home.stateDir, all);
      // The order the prune deletes them in (by end).
      const ended = readStore(
        home.stateDir,
        (store) =>
          store.db.prepare("SELECT run_id FROM runs ORDER BY finished_at, rowid").all()
            .map((r) => String(r.run_id)),
      );
      const events = (rows: string | undefined) =>
        Number(rows?.split(",")[RUN_TABLES.indexOf("events")]);
      const sessionDir = (id: string) => join(home!.stateDir, "sessions", id);
      for (const id of all) mkdirSync(sessionDir(id), { recursive: true });
      const crashing = await startHostProcess({ ...home.env, PI_WORKFLOWS_CRASH_AT: point });
      // No retry (a raw request): what the killed host left is what the next one finds.
      await requestOnce(home.socketPath, hostRequest("host.prune", { payload: {} }))
        .catch(() => undefined);
      await crashing.exited;
      expect(crashing.child.signalCode).toBe("SIGKILL");
      if (!large) {
        // The run being deleted at the kill: the one whose events hold the ninth batch.
        let batches = 0;
        const killedAt = ended.findIndex((id) => {
          batches += Math.ceil(events(before.get(id)) / BATCH_ROWS);
          return batches >= 9;
        });
        expect(killedAt).toBeGreaterThanOrEqual(7);
        // What the committed transactions left, in end order: runs gone, then at most one marked
        // (a transaction's time budget, 4 ms, ended the one that marked it before its end: a
        // preempted transaction under load), then runs whole; the killed one never gone, every
        // later run whole, doctor clean. The first transaction committed: the first run went,
        // or (preempted) is marked.
        const cut = runRows(home.stateDir, all);
        const order = ended.slice(0, killedAt + 1);
        const states = order.map((id) =>
          cut.get(id) === GONE ? "gone" : cut.get(id) === before.get(id) ? "whole" : "marked"
        );
        expect(states.join(" ")).toMatch(/^(gone ?)*(marked ?)?(whole ?)*$/);
        expect(states[0]).not.toBe("whole");
        expect(states[killedAt]).not.toBe("gone");
        for (const id of all.filter((id) => !order.includes(id))) {
          expect(cut.get(id), id).toBe(before.get(id));
        }
        readStore(home.stateDir, (store) => {
          const marked = order.filter((_, i) => states[i] === "marked");
          const marks = store.db.prepare("SELECT run_id FROM run_prunes").all();
          expect(marks.map((r) => r.run_id)).toEqual(marked);
          for (const id of marked) {
            // Marked and gone to readers, and every event the killed transaction deleted is back
            // (a run marked before it may have lost its events in a committed transaction).
            expect(readRunStatus(store, id)).toBeUndefined();
            const left = events(cut.get(id));
            if (id === order[killedAt]) expect(left).toBe(events(before.get(id)));
            else expect([0, events(before.get(id))]).toContain(left);
          }
          expect(checkInvariants(store)).toEqual([]);
        });
      }
      if (large) {
        const cut = readStore(home.stateDir, (store) => ({
          marks: store.db.prepare("SELECT run_id FROM run_prunes").all().map((r) => r.run_id),
          status: readRunStatus(store, runs.old[0]!),
          listed: listRuns(store, { all: true }).map((r) => r.runId),
          violations: checkInvariants(store),
        }));
        // The large run is marked and half deleted: gone to every reader, doctor clean.
        expect(cut.marks).toEqual([runs.old[0]]);
        expect(runRows(home.stateDir, [runs.old[0]!]).get(runs.old[0]!)).not.toBe(GONE);
        expect(cut.status).toBeUndefined();
        expect(cut.listed).not.toContain(runs.old[0]);
        expect(cut.violations).toEqual([]);
      }
      const answer = await runCliProcess(["prune", "--json"], home.env, 60_000);
      // A new host, started by the client, ran the pass to its end.
      expect(answer.code).toBe(0);
      const after = runRows(home.stateDir, all);
      for (const id of runs.young) expect(after.get(id)).toBe(before.get(id));
      for (const id of runs.old) expect(after.get(id)).toBe(GONE);
      expect(
        readStore(home.stateDir, (store) => store.db.prepare("SELECT * FROM run_prunes").all()),
      )
        .toEqual([]);
      // The runs the killed host deleted lose their files too (the next pass finds them).
      expect(runs.old.filter((id) => existsSync(sessionDir(id)))).toEqual([]);
      expect(runs.young.filter((id) => existsSync(sessionDir(id)))).toEqual(runs.young);
      await runCliProcess(["host", "stop"], home.env, 30_000);
      await waitFor(
        async () => (await runCliProcess(["doctor"], home!.env, 30_000)).code === 0,
        "doctor clean",
        30_000,
        200,
      );
      doctorClean(home.stateDir);
    });
  }
});
