/**
 * Schedules through a real host and the CLI: a workflow file's declared schedule is applied
 * only by `schedule apply` (again: unchanged); `host status` counts schedules and names the next
 * slot; a schedule whose workflow file disappeared fires failed runs with the load error and
 * pauses itself after 3; a slot skipped for overlap loads nothing; a firing whose settling threw
 * before its workflow's resolution is retried, one that threw after it is not; bad inputs (CLI and `/workflow schedule`) are refused with one line before a
 * host is asked.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CliProcess,
  killAll,
  runCliProcess,
  startHostProcess,
  stopProcess,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { queryState } from "../support/state-db.ts";
import { parseCommand } from "../../src/cli/parse-command.ts";
import { parseScheduleArgs } from "../../src/extension/schedule-args.ts";

afterEach(killAll);

type Home = ReturnType<typeof tempHome>;
type Cli = (...args: string[]) => ReturnType<typeof runCliProcess>;

function firingsOf(home: Home, name: string) {
  return queryState(
    home.stateDir,
    "SELECT f.slot_at, f.state, f.reason, r.state AS run FROM schedule_firings f JOIN " +
      "schedules s ON s.schedule_id = f.schedule_id LEFT JOIN runs r ON r.run_id = f.run_id " +
      "WHERE s.name = ? ORDER BY f.slot_at",
    name,
  );
}

/** A workflow file that appends a line to `loads` each time it is loaded. */
function countedWorkflow(name: string, loads: string, node: string): string {
  return `import { appendFileSync } from "node:fs";
import { checkpoint, compute, defineWorkflow } from "pi-workflows";
appendFileSync(${JSON.stringify(loads)}, "load\\n");
export default defineWorkflow({ name: ${
    JSON.stringify(name)
  }, startAt: "a", nodes: { a: ${node} } });
`;
}

const loadCount = (loads: string) =>
  existsSync(loads) ? readFileSync(loads, "utf8").split("\n").filter(Boolean).length : 0;

/**
 * Every resolution is a child that loads the workflow file: the file counts its loads. A slot
 * skipped for overlap used to wait for one first, so on a loaded machine the slots of a short
 * interval queued (pending, shown `starting`) behind each other's resolutions.
 */
async function skippedSlotsLoadNothing(home: Home, project: string, cli: Cli) {
  const loads = join(home.root, "hold-loads");
  writeFileSync(
    join(project, "hold.workflow.ts"),
    countedWorkflow("hold", loads, `checkpoint({ summary: "hold the schedule's run open" })`),
  );
  const added = await cli("schedule", "add", "hold", "./hold.workflow.ts", "--every", "1s");
  expect(added.code, added.stderr).toBe(0);
  // The first slot's run waits at its checkpoint: active, so each later slot is skipped.
  const firings = await waitFor(
    () => {
      const rows = firingsOf(home, "hold");
      const skipped = rows.filter((r) => r.state === "skipped").length;
      return rows[0]?.run === "waiting" && skipped >= 2 ? rows : null;
    },
    () => `the run to wait and 2 slots to be skipped: ${JSON.stringify(firingsOf(home, "hold"))}`,
    90_000,
    100,
  );
  expect(firings![0]).toMatchObject({ state: "started", run: "waiting" });
  for (const later of firings!.slice(1)) {
    expect(later).toMatchObject({ state: expect.stringMatching(/^(skipped|pending)$/) });
    if (later.state === "skipped") expect(later.reason).toBe("overlap");
  }
  // `add` loaded it once, the first slot's resolution once, its worker once: no skipped slot
  // loaded it (before, each did: 3 + 2 loads at least).
  expect(loadCount(loads)).toBeLessThanOrEqual(3);
}

/**
 * A settle that throws before the resolution (here: an input it cannot decode, every attempt
 * until it is put right) is retried, and the slots after it still start; before, its firing
 * stayed pending until the next host start. One that throws after the resolution (here: a
 * trigger refuses the start; in life a definition over the column limit) is not: each retry
 * would resolve the workflow again in a new child, and throw again.
 */
async function failedSettlesRetriedBeforeResolution(
  home: Home,
  project: string,
  cli: Cli,
  host: CliProcess,
) {
  const loads = join(home.root, "late-loads");
  writeFileSync(
    join(project, "late.workflow.ts"),
    countedWorkflow("late", loads, `compute({ run: () => "done" })`),
  );
  writeFileSync(
    join(project, "quick.workflow.ts"),
    `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({ name: "quick", startAt: "a",
  nodes: { a: compute({ run: () => "done" }) } });
`,
  );
  const db = new DatabaseSync(join(home.stateDir, "state.sqlite"));
  const marker = "lateRefusedByTheTest";
  const lateLines = () =>
    host.stderr().split("\n").filter((l) =>
      l.includes("schedule.settleFailed") && l.includes(marker)
    );
  let recorded: number;
  let before: number;
  try {
    db.exec("PRAGMA busy_timeout = 30000");
    db.exec(
      "CREATE TRIGGER test_refuse_late BEFORE UPDATE OF state ON schedule_firings " +
        "WHEN NEW.state = 'started' AND NEW.schedule_id = " +
        "(SELECT schedule_id FROM schedules WHERE name = 'late') " +
        `BEGIN SELECT RAISE(ABORT, '${marker}'); END`,
    );
    const added = await cli("schedule", "add", "late", "./late.workflow.ts", "--every", "1s");
    expect(added.code, added.stderr).toBe(0);
    // Paused as soon as a slot is recorded: each slot recorded before the pause still settles
    // (docs/schedules.md, 'Pause, resume, remove'), one resolution after another, so the fewer
    // there are the sooner they have all failed on the trigger, which stays until then.
    await waitFor(() => firingsOf(home, "late").length > 0, "a late slot", 60_000, 100);
    expect((await cli("schedule", "pause", "late")).code).toBe(0);
    recorded = firingsOf(home, "late").length;
    expect(recorded).toBeGreaterThanOrEqual(1);

    // Queue: the failed slot's retry comes after the slots recorded meanwhile, and may find one
    // of their runs active (the fixed input below lands at any time); held then, not skipped for
    // overlap, so its firing is started whatever the order.
    const quick = await cli(
      "schedule",
      "add",
      "quick",
      "./quick.workflow.ts",
      "--every",
      "1s",
      "--overlap",
      "queue",
    );
    expect(quick.code, quick.stderr).toBe(0);
    expect((await cli("schedule", "pause", "quick")).code).toBe(0);
    // A slot recorded before the pause could still be settling (it would meet the bad input
    // below, before the resume) or its run be active (the first slot after the resume would be
    // skipped for overlap, and the one whose settle fails never checked): wait for neither.
    await waitFor(
      () =>
        firingsOf(home, "quick").every((r) =>
          r.state !== "pending" && !["queued", "running", "waiting"].includes(r.run as string)
        ),
      () => `quick's slots to settle and runs to end: ${JSON.stringify(firingsOf(home, "quick"))}`,
      60_000,
      100,
    );
    before = firingsOf(home, "quick").length;
    db.exec("UPDATE schedules SET input_json = '{' WHERE name = 'quick'");
    expect((await cli("schedule", "resume", "quick")).code).toBe(0);
    await waitFor(
      () =>
        host.stderr().split("\n").some((l) =>
          // Quick's own: its input does not parse (late's carry the marker).
          l.includes("schedule.settleFailed") && l.includes("SyntaxError")
        ),
      "a quick slot's settle to fail",
      60_000,
      100,
    );
    db.exec("UPDATE schedules SET input_json = 'null' WHERE name = 'quick'");

    await waitFor(
      () => lateLines().length >= recorded,
      () => `each of the ${recorded} late slots to fail: ${lateLines().length} failures`,
      60_000,
      100,
    );
    db.exec("DROP TRIGGER test_refuse_late");
  } finally {
    db.close();
  }
  // The first slot after the resume is the one whose settle failed: it is retried and starts.
  const after = await waitFor(
    () => {
      const rows = firingsOf(home, "quick").slice(before);
      return rows[0]?.state !== "pending" && rows.slice(1).some((r) => r.state === "started")
        ? rows
        : null;
    },
    () =>
      `the failed firing to settle and a later one to start: ${
        JSON.stringify(firingsOf(home, "quick").slice(before))
      }`,
    60_000,
    100,
  );
  expect(after[0]!.state).toBe("started");
  expect((await cli("schedule", "pause", "quick")).code).toBe(0);
  // The late slots each failed once, never retried (the quick checks gave a retry the time):
  // one resolution each, besides `add`'s load, and each firing left pending.
  const failures = lateLines();
  expect(failures).toHaveLength(recorded);
  for (const line of failures) expect(line).toMatch(/ attempt=1 retry=false$/);
  expect(loadCount(loads)).toBe(1 + recorded);
  expect(firingsOf(home, "late").map((r) => r.state)).toEqual(Array(recorded).fill("pending"));
}

const DECLARED = `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "beat",
  schedule: { name: "heartbeat", every: "2s", overlap: "skip", input: { from: "file" } },
  startAt: "a",
  nodes: { a: compute({ run: ({ input }) => ({ input }) }) },
});
`;

describe("schedules through the host", () => {
  it("applies a file's schedule on request only, and pauses one whose file is gone", async () => {
    const home = tempHome();
    const project = join(home.root, "project");
    mkdirSync(project, { recursive: true });
    const file = join(project, "beat.workflow.ts");
    writeFileSync(file, DECLARED);
    const cli = (...args: string[]) =>
      runCliProcess([...args], home.env, 120_000, { cwd: project });
    const host = await startHostProcess(home.env);
    try {
      // Loading the file (a run of it) schedules nothing.
      expect((await cli("start", "./beat.workflow.ts")).code).toBe(0);
      expect(queryState(home.stateDir, "SELECT name FROM schedules")).toEqual([]);

      const applied = await cli("schedule", "apply", "./beat.workflow.ts", "--json");
      expect(applied.code).toBe(0);
      const receipt = JSON.parse(applied.stdout);
      expect(receipt).toMatchObject({
        created: true,
        schedule: { name: "heartbeat", every: "2s", overlap: "skip", state: "enabled" },
      });
      const again = JSON.parse(
        (await cli("schedule", "apply", "./beat.workflow.ts", "--json")).stdout,
      );
      expect(again).toMatchObject({ created: false, changed: false });

      const status = await cli("host", "status");
      expect(status.stdout).toMatch(/schedules: 1 enabled, 0 paused \(next slot \d{4}-/);

      // The first firing starts a run with the declared input.
      const firstRun = await waitFor(
        () => {
          const [row] = queryState(
            home.stateDir,
            "SELECT f.run_id, r.state FROM schedule_firings f JOIN runs r ON r.run_id = f.run_id " +
              "WHERE f.state = 'started' ORDER BY f.slot_at LIMIT 1",
          );
          return row?.state === "completed" ? (row.run_id as string) : null;
        },
        "a scheduled run to complete",
        60_000,
        100,
      );
      const [input] = queryState(
        home.stateDir,
        "SELECT input_json FROM runs WHERE run_id = ?",
        firstRun!,
      );
      expect(JSON.parse(input!.input_json as string)).toEqual({ from: "file" });

      // A secret named with --env reaches the schedule's runs' shell nodes, and is never stored.
      const token = "tok_schedule_secret_42";
      writeFileSync(
        join(project, "tok.workflow.ts"),
        `import { defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({ name: "tok", startAt: "s",
  nodes: { s: shell({ exec: () => ({ command: 'test "$API_TOKEN" = ${token} && echo same', shell: true }),
    parse: (r) => r.stdout.trim() }) } });
`,
      );
      const added = await runCliProcess(
        ["schedule", "add", "tok", "./tok.workflow.ts", "--every", "2s", "--env", "API_TOKEN"],
        { ...home.env, API_TOKEN: token },
        120_000,
        { cwd: project },
      );
      expect(added.code, added.stderr).toBe(0);
      expect(added.stderr).toContain("--env API_TOKEN: kept in the host's memory only");
      expect(added.stderr).toContain("'pi-workflows schedule resume tok'");
      const tokRun = await waitFor(
        () => {
          const [row] = queryState(
            home.stateDir,
            "SELECT r.state, r.output_json FROM schedule_firings f JOIN schedules s ON " +
              "s.schedule_id = f.schedule_id JOIN runs r ON r.run_id = f.run_id WHERE s.name = 'tok' ORDER BY f.slot_at LIMIT 1",
          );
          return row?.state === "completed" || row?.state === "failed" ? row : null;
        },
        "the tok schedule's run to end",
        60_000,
        100,
      );
      expect(tokRun).toMatchObject({ state: "completed", output_json: '"same"' });
      const stored = queryState(home.stateDir, "SELECT env_json FROM schedules WHERE name = 'tok'");
      expect(JSON.stringify(stored)).not.toContain(token);
      expect((await cli("schedule", "remove", "tok")).code).toBe(0);

      // The file disappears: failed runs with the load error, then the schedule pauses. It goes
      // while none of the schedule's runs is active: one still in flight would be parked
      // (workflowSourceChanged), and under `skip` a slot loads nothing while a run is active.
      expect((await cli("schedule", "pause", "heartbeat")).code).toBe(0);
      await waitFor(
        () =>
          queryState(
            home.stateDir,
            "SELECT COUNT(*) AS n FROM schedule_firings f LEFT JOIN runs r ON r.run_id = " +
              "f.run_id WHERE f.state = 'pending' OR r.state IN ('queued', 'running', 'waiting')",
          )[0]!.n === 0,
        "the heartbeat's runs to end",
        90_000,
        100,
      );
      rmSync(file);
      expect((await cli("schedule", "resume", "heartbeat")).code).toBe(0);
      const paused = await waitFor(
        () => {
          const [row] = queryState(home.stateDir, "SELECT paused, paused_reason FROM schedules");
          return row?.paused === 1 ? row : null;
        },
        () =>
          `the schedule to pause itself: ${
            JSON.stringify(queryState(
              home.stateDir,
              "SELECT f.state, f.reason, r.state AS run, r.blocked_reason FROM " +
                "schedule_firings f LEFT JOIN runs r ON r.run_id = f.run_id WHERE f.state <> " +
                "'skipped' ORDER BY f.slot_at DESC LIMIT 8",
            ))
          }`,
        90_000,
        100,
      );
      expect(paused!.paused_reason).toMatch(/failed to load 3 times in a row: /);
      // The third failure paused it. A slot recorded before that (resolutions slower than the
      // interval) still settles after the pause, and fails too: each is waited for.
      const failed = await waitFor(
        () => {
          const rows = queryState(
            home.stateDir,
            "SELECT f.state, f.created_at, f.settled_at, r.state AS run FROM schedule_firings f " +
              "JOIN schedules s ON s.schedule_id = f.schedule_id LEFT JOIN runs r ON " +
              "r.run_id = f.run_id WHERE s.name = 'heartbeat' AND f.state IN ('pending', 'failed') " +
              "ORDER BY f.slot_at",
          );
          return rows.every((r) => r.state === "failed") ? rows : null;
        },
        "the slots recorded before the pause to settle",
        60_000,
        100,
      );
      expect(failed.length).toBeGreaterThanOrEqual(3);
      for (const firing of failed) expect(firing.run).toBe("failed");
      for (const later of failed.slice(3)) {
        expect(later.created_at as number).toBeLessThanOrEqual(failed[2]!.settled_at as number);
      }
      const shown = await cli("schedule", "show", "heartbeat");
      expect(shown.stdout).toMatch(/^heartbeat: paused/);
      expect(shown.stdout).toMatch(/failed run-/);

      await skippedSlotsLoadNothing(home, project, cli);
      await failedSettlesRetriedBeforeResolution(home, project, cli, host);

      const doctor = await cli("doctor");
      expect(doctor.stdout).toContain("Invariants: all hold");
    } finally {
      await stopProcess(host);
      await home.cleanup();
    }
  }, 300_000);

  it("refuses bad inputs with one line and exit 2, before any host is asked", async () => {
    const home = tempHome();
    try {
      const result = await runCliProcess(
        ["schedule", "add", "nightly", "tick", "--cron", "61 * * * *"],
        home.env,
        60_000,
      );
      expect(result.code).toBe(2);
      expect(result.stderr).toBe(
        'Invalid cron expression "61 * * * *": Invalid value for minute: 61\n',
      );
      // Nothing needed a host, so none started.
      expect(existsSync(home.socketPath)).toBe(false);
    } finally {
      await home.cleanup();
    }
  }, 120_000);
});

describe("schedule command lines", () => {
  const cases: [string[], RegExp][] = [
    [["--cron", "* * * *"], /expected 5 fields .* found 4/],
    [["--cron", "0 9 * * *", "--tz", "Mars/Base"], /^Unknown time zone "Mars\/Base"/],
    [["--every", "500ms"], /^Invalid interval "500ms": expected a duration/],
    [["--every", "1m", "--tz", "UTC"], /--tz applies only to --cron/],
    [
      ["--every", "1m", "--overlap", "parallel"],
      /^Invalid --overlap 'parallel': use one of skip, queue, cancel-previous/,
    ],
    [
      ["--every", "1m", "--catch-up", "all"],
      /^Invalid --catch-up 'all': use one of none, latest, all-bounded/,
    ],
    [[], /needs a timing/],
    [["--cron", "0 9 * * *", "--every", "1m"], /either --cron or --every/],
    [["--every", "1m", "--input-json", "{"], /^Invalid --input-json/],
  ];
  for (const [options, message] of cases) {
    it(`refuses add ${options.join(" ") || "(no timing)"}`, () => {
      expect(() => parseCommand(["schedule", "add", "nightly", "tick", ...options]))
        .toThrow(message);
    });
  }

  it("refuses a bad name and an unknown action, and reads a good add", () => {
    expect(() => parseCommand(["schedule", "show", "no good"])).toThrow(/^Invalid schedule name/);
    expect(() => parseCommand(["schedule", "edit", "x"])).toThrow(/Unknown schedule action 'edit'/);
    expect(parseCommand(["schedule", "add", "a", "wf", "--cron", "0 9 * * MON-FRI", "--tz", "UTC"]))
      .toMatchObject({ action: "add", cron: "0 9 * * MON-FRI", timeZone: "UTC", every: null });
  });

  it("parses /workflow schedule in Pi with quoted cron fields, and refuses bad ones", () => {
    expect(parseScheduleArgs('add nightly audit --cron "0 9 * * 1-5" --tz Europe/Berlin'))
      .toMatchObject({ action: "add", cron: "0 9 * * 1-5", timeZone: "Europe/Berlin" });
    expect(parseScheduleArgs("add prs check --every 30m --overlap queue --replace"))
      .toMatchObject({ every: "30m", overlap: "queue", replace: true });
    expect(() => parseScheduleArgs('add x y --cron "0 9 * *"')).toThrow(/found 4/);
    expect(() => parseScheduleArgs("add x y --every 2x")).toThrow(/Invalid interval "2x"/);
    expect(() => parseScheduleArgs("add x y --every 1m --catch-up some")).toThrow(/--catch-up/);
    expect(() => parseScheduleArgs("show")).toThrow(/Usage: \/workflow schedule show <name>/);
  });
});
