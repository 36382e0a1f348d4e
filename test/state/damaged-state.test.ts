/**
 * A state database damaged in its middle (a page overwritten after a checkpoint): `doctor`
 * runs SQLite's integrity check, says where (table or index, page) and exits 5 with the
 * backup-and-reset instruction; the host refuses to serve it at start with the same instruction
 * instead of starting and failing every run later.
 */
import {
  chmodSync,
  closeSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { formatDoctorReport, runDoctor } from "../../src/state/doctor.ts";
import { StateDamagedError } from "../../src/state/errors.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

let home: TempHome | undefined;
afterEach(async () => {
  await home?.cleanup();
  home = undefined;
});

/** 300 runs with 2 KB inputs, checkpointed into the main file, then 8 KiB of junk mid-file. */
function damagedState(): TempHome {
  const h = tempHome();
  seedRuns(
    h.stateDir,
    Array.from(
      { length: 300 },
      (_, i) => ({ runId: `run-${i}`, input: { pad: "x".repeat(2000) } }),
    ),
  );
  const path = join(h.stateDir, "state.sqlite");
  const db = new DatabaseSync(path);
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  const middle = Math.floor(statSync(path).size / 2 / 4096) * 4096;
  const fd = openSync(path, "r+");
  writeSync(fd, Buffer.alloc(8192, 0x5a), 0, 8192, middle);
  closeSync(fd);
  return h;
}

describe("a damaged state database", () => {
  it("doctor says where it is damaged and how to reset; the host refuses to serve it", async () => {
    home = damagedState();
    const file = join(home.stateDir, "state.sqlite");
    const report = runDoctor({ stateDir: home.stateDir });
    expect(report.ok).toBe(false);
    expect(report.integrity.length).toBeGreaterThan(0);
    expect(report.integrity[0]).toMatch(/Tree \d+ \((table|index) \w+\) page \d+/);
    const text = formatDoctorReport(report);
    expect(text).toContain("Integrity: damaged");
    expect(text).toContain(`mv ${file} ${file}.bak`);
    expect(text).toContain(`sqlite3 ${file}.bak .recover | sqlite3 ${file}.bak.recovered`);

    const doctor = await runCliProcess(["doctor"], home.env, 30_000);
    expect(doctor.code).toBe(5);
    expect(doctor.stdout).toMatch(/Tree \d+ \((table|index) \w+\) page \d+/);

    expect(() =>
      openStateStore({
        stateDir: home!.stateDir,
        clock: systemClock,
        ids: randomIds,
        checkIntegrity: true,
      })
    )
      .toThrow(StateDamagedError);
    const start = await runCliProcess(["host", "start"], home.env, 60_000);
    expect(start.code).toBe(4);
    expect(start.stderr).toContain("the database is damaged (SQLite:");
    expect(start.stderr).toContain(`mv ${file} ${file}.bak`);
    expect(start.stderr).toContain(`sqlite3 ${file}.bak .recover`);
    expect(start.stderr.trim().split("\n")).toHaveLength(1);

    // The viewer opens without the whole-file check: a read that reaches the damaged page says
    // what the host says, not SQLite's bare "database disk image is malformed".
    const view = await runCliProcess(["view", "--once", "--all"], home.env, 30_000);
    expect(view.code).toBe(1);
    expect(view.stderr).toMatch(
      /^Cannot read workflow state .*: the database is damaged \(SQLite:/,
    );
    expect(view.stderr).toContain(`sqlite3 ${file}.bak .recover`);
    expect(view.stderr.trim().split("\n")).toHaveLength(1);
  });

  it("an intact database passes both checks", () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-ok" }]);
    const store = openStateStore({
      stateDir: home.stateDir,
      clock: systemClock,
      ids: randomIds,
      checkIntegrity: true,
    });
    closeStateStore(store);
    const report = runDoctor({ stateDir: home.stateDir });
    expect(report).toMatchObject({ ok: true, integrity: [], checkError: null });
    expect(formatDoctorReport(report)).toContain("Integrity: ok");
  });

  it("modes: doctor says what the host fixes; after a 0400 database is fixed the host writes", () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-modes" }]);
    const file = join(home.stateDir, "state.sqlite");
    const mode = (path: string) => statSync(path).mode & 0o777;
    chmodSync(home.stateDir, 0o755);
    chmodSync(file, 0o644);
    let report = runDoctor({ stateDir: home.stateDir });
    expect(report.ok).toBe(true);
    expect(report.modes.map((m) => m.note)).toEqual([
      "state directory is 0755; the host narrows it to 0700 when it starts",
      "state.sqlite is 0644; the host narrows it to 0600 when it starts",
    ]);

    // A 0400 database: doctor's read-only open leaves -wal/-shm with that mode too.
    for (const suffix of ["-wal", "-shm"]) rmSync(file + suffix, { force: true });
    chmodSync(file, 0o400);
    report = runDoctor({ stateDir: home.stateDir });
    expect(report.ok).toBe(false);
    expect(formatDoctorReport(report)).toContain(
      `Mode: state.sqlite is 0400, which the host cannot write: run \`chmod 600 ${file}\``,
    );
    expect(mode(`${file}-shm`)).toBe(0o400);
    chmodSync(file, 0o600);
    const store = openStateStore({ stateDir: home.stateDir, clock: systemClock, ids: randomIds });
    try {
      expect(mode(home.stateDir)).toBe(0o700);
      expect(mode(`${file}-shm`)).toBe(0o600);
      expect(mode(`${file}-wal`)).toBe(0o600);
      seedable(store);
    } finally {
      closeStateStore(store);
    }
    expect(runDoctor({ stateDir: home.stateDir }).modes).toEqual([]);
  });

  it("modes of a symlinked state.sqlite's -wal: beside the target, where SQLite keeps it", () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-link" }]);
    const link = join(home.stateDir, "state.sqlite");
    const elsewhere = join(home.root, "elsewhere");
    mkdirSync(elsewhere, { mode: 0o700 });
    const target = join(elsewhere, "state.sqlite");
    for (const suffix of ["-wal", "-shm"]) rmSync(link + suffix, { force: true });
    renameSync(link, target);
    symlinkSync(target, link);
    // A WAL readable by others (it holds payloads) beside the target; none beside the link.
    writeFileSync(`${target}-wal`, "", { mode: 0o644 });
    chmodSync(`${target}-wal`, 0o644);
    expect(runDoctor({ stateDir: home.stateDir }).modes.map((m) => m.note)).toContain(
      "state.sqlite-wal is 0644; the host sets it to 0600 when it starts",
    );
    const store = openStateStore({ stateDir: home.stateDir, clock: systemClock, ids: randomIds });
    try {
      expect(statSync(`${target}-wal`).mode & 0o777).toBe(0o600);
      seedable(store);
    } finally {
      closeStateStore(store);
    }
  });
});

/** A write goes through (the companions are writable). */
function seedable(store: ReturnType<typeof openStateStore>): void {
  store.db.exec("BEGIN IMMEDIATE; UPDATE meta SET value = value WHERE key = 'identity'; COMMIT");
}
