/**
 * The portable process backend: the process table as `ps` prints it (macOS, the BSDs, and Linux
 * when forced). `ps` is another process, so a read is asynchronous and bounded: it never blocks
 * the event loop, a `ps` that hangs is killed after the timeout, and a missing or failing `ps`
 * is a `ProcessTableUnavailable` the caller handles (no signal is sent on a table it could not
 * read). Reads are shared: every caller that does not need a fresh view within one supervision
 * tick gets the same table, and callers that need one read after they asked (before a signal)
 * share the next run. So `ps` runs at most once at a time, with at most one run queued.
 */
import { execFile, spawnSync } from "node:child_process";
import { parsePsOutput, PS_COLUMNS, type PsRow } from "./ps-output.ts";
import { type ProcessStat, type ProcessTable, ProcessTableUnavailable } from "./process-table.ts";

/** Produces `ps` output (the real `ps`, or a test's reader). */
export type PsReader = () => Promise<string>;

export interface PsTableSource {
  /**
   * The table. `fresh`: read by a `ps` started after this call (a decision to signal);
   * otherwise a table read up to `shareMs` ago, or the read in flight, is shared.
   */
  table(options?: { fresh?: boolean }): Promise<ProcessTable>;
  /** How many times `ps` ran (figures for the bench). */
  readonly runs: number;
}

export interface PsTableOptions {
  read?: PsReader;
  /** How long a non-fresh read may reuse the last table (one supervision tick). */
  shareMs?: number;
  now?: () => number;
}

export const PS_TIMEOUT_MS = 5_000;
const SHARE_MS = 100;

export function createPsTableSource(options: PsTableOptions = {}): PsTableSource {
  const read = options.read ?? (() => runPs());
  const shareMs = options.shareMs ?? SHARE_MS;
  const now = options.now ?? (() => performance.now());
  let runs = 0;
  let inflight: Promise<ProcessTable> | null = null;
  let queued: Promise<ProcessTable> | null = null;
  let latest: { startedAt: number; table: ProcessTable } | null = null;

  const start = (): Promise<ProcessTable> => {
    runs++;
    const startedAt = now();
    const run = read().then((text) => {
      let rows: PsRow[];
      try {
        rows = parsePsOutput(text);
      } catch (error) {
        throw new ProcessTableUnavailable(
          `ps printed what this version cannot read: ${(error as Error).message}`,
        );
      }
      const table = psTable(rows);
      if (latest === null || latest.startedAt <= startedAt) latest = { startedAt, table };
      return table;
    });
    inflight = run;
    const clear = () => {
      if (inflight === run) inflight = null;
    };
    run.then(clear, clear);
    return run;
  };

  return {
    get runs() {
      return runs;
    },
    table({ fresh = false } = {}) {
      if (!fresh) {
        if (latest !== null && now() - latest.startedAt <= shareMs) {
          return Promise.resolve(latest.table);
        }
        return inflight ?? start();
      }
      if (inflight === null) return start();
      // The run in flight began before this call: the next one is shared by every fresh read
      // that arrives until it starts.
      if (queued === null) {
        const next = inflight.then(() => {}, () => {}).then(() => {
          if (queued === next) queued = null;
          return start();
        });
        queued = next;
      }
      return queued;
    },
  };
}

export function psTable(rows: PsRow[]): ProcessTable {
  const byPid = new Map<number, PsRow>();
  for (const row of rows) byPid.set(row.pid, row);
  return {
    stat: (pid) => {
      const row = byPid.get(pid);
      return row ? statOf(row) : null;
    },
    all: () => [...byPid.values()].map(statOf),
    residentBytes: (pid) => byPid.get(pid)?.rssBytes ?? null,
  };
}

function statOf(row: PsRow): ProcessStat {
  return {
    pid: row.pid,
    ppid: row.ppid,
    pgrp: row.pgrp,
    state: row.state,
    startTime: row.startTime,
  };
}

/** Bound of the synchronous one-process read: a spawn waits no longer than this on `ps`. */
export const PS_NOW_TIMEOUT_MS = 5_000;

/**
 * A table of `pid` alone, read synchronously with `ps -p PID` (a few milliseconds); null when
 * `ps` is missing, fails, or passes `PS_NOW_TIMEOUT_MS` (then it is killed).
 */
export function readPsTableNow(pid: number, command = "ps"): ProcessTable | null {
  const result = spawnSync(command, ["-o", PS_COLUMNS, "-p", String(pid)], {
    env: psEnvironment(),
    timeout: PS_NOW_TIMEOUT_MS,
    killSignal: "SIGKILL",
    encoding: "utf8",
    maxBuffer: 1024 * 1024,
  });
  // `ps -p` of a PID that does not exist exits 1 with no rows: an empty table.
  if (result.error || result.status === null) return null;
  try {
    return psTable(parsePsOutput(result.stdout));
  } catch {
    return null;
  }
}

function psEnvironment(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    LC_ALL: "C",
    TZ: "UTC0",
    // Where `ps` lives on macOS, the BSDs and Linux, after the user's own PATH.
    PATH: [process.env.PATH, "/bin", "/usr/bin"].filter(Boolean).join(":"),
  };
}

/**
 * Runs `ps -A` in the C locale and UTC (stable `lstart` text). Bounded: killed after
 * `PS_TIMEOUT_MS`; its output is a few hundred bytes per process.
 */
export function runPs(
  { timeoutMs = PS_TIMEOUT_MS, command = "ps" }: { timeoutMs?: number; command?: string } = {},
): Promise<string> {
  const env = psEnvironment();
  return new Promise((resolve, reject) => {
    execFile(
      command,
      ["-A", "-o", PS_COLUMNS],
      { env, timeout: timeoutMs, killSignal: "SIGKILL", maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error === null) return resolve(stdout);
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "ENOENT") {
          return reject(
            new ProcessTableUnavailable("ps was not found (looked on PATH, /bin, /usr/bin)"),
          );
        }
        if ((error as { killed?: boolean }).killed) {
          return reject(new ProcessTableUnavailable(`ps did not answer within ${timeoutMs} ms`));
        }
        const detail = String(stderr).trim().split("\n")[0] || error.message;
        reject(new ProcessTableUnavailable(`ps failed: ${detail.slice(0, 200)}`));
      },
    );
  });
}
