/**
 * `pi-workflows doctor`: opens the state read-only, checks identity and DDL digest, runs SQLite's
 * integrity check (which says where a file is damaged) and the invariant checker, and reports. The report names the state file and nothing else private (no
 * ids beyond run ids, no payloads).
 */
import { type Clock, randomIds, systemClock } from "../base/clock.ts";
import { salvageHint, StateOpenError } from "./errors.ts";
import { readHostEpoch } from "./host-claim.ts";
import { checkInvariants, type Violation } from "./invariants.ts";
import { type HostStatusCounts, hostStatusCounts } from "./queries.ts";
import { DDL_DIGEST_PREFIX_LENGTH, ddlDigest, SCHEMA_VERSION, STATE_IDENTITY } from "./schema.ts";
import { closeStateStore, openStateStore, STATE_FILE_NAME } from "./store.ts";
import { statSync } from "node:fs";
import { dirname, join } from "node:path";
import { integrityProblems } from "./integrity.ts";
import { sqliteFilePath } from "./state-file-path.ts";

const MAX_INTEGRITY_LINES = 20;

export interface DoctorReport {
  /** True when the database opened, matched this build, is intact and violates no invariant. */
  ok: boolean;
  file: string;
  identity: string;
  schemaVersion: number;
  ddlDigest: string;
  /** Why the database could not be checked (open error), else null. */
  openError: string | null;
  /** What SQLite's integrity_check reports (at most 20 lines); [] when the file is intact. */
  integrity: string[];
  /**
   * Modes that differ from the rule (directory 0700, files 0600): notes on what the host fixes at
   * start, and `blocking` when the host cannot use the file as it is.
   */
  modes: { note: string; blocking: boolean }[];
  /** A query of the checks failed (a damaged page it reached), else null. */
  checkError: string | null;
  /** `live`: the claim's lease has not expired (`leaseUntil`); it does not prove a host answers. */
  hostEpoch: { epoch: number; live: boolean; leaseUntil: number | null } | null;
  counts: HostStatusCounts | null;
  violations: Violation[];
  /**
   * What is wrong with `config.json` in the state directory (read by the caller: this layer does
   * no config I/O), else null. Every `start` and `prune` refuses while it is invalid.
   */
  configProblem: string | null;
}

export function runDoctor(
  opts: { stateDir: string; clock?: Clock; configProblem?: string | null },
): DoctorReport {
  const clock = opts.clock ?? systemClock;
  const report: DoctorReport = {
    ok: false,
    file: join(opts.stateDir, STATE_FILE_NAME),
    identity: STATE_IDENTITY,
    schemaVersion: SCHEMA_VERSION,
    ddlDigest: ddlDigest(),
    openError: null,
    integrity: [],
    modes: modeNotes(opts.stateDir),
    checkError: null,
    hostEpoch: null,
    counts: null,
    violations: [],
    configProblem: opts.configProblem ?? null,
  };
  let store;
  try {
    store = openStateStore({ stateDir: opts.stateDir, clock, ids: randomIds, readOnly: true });
  } catch (error) {
    if (!(error instanceof StateOpenError)) throw error;
    report.openError = error.message;
    return report;
  }
  try {
    report.integrity = integrityProblems(store.db, "integrity_check", MAX_INTEGRITY_LINES);
    try {
      const now = clock.now();
      report.hostEpoch = readHostEpoch(store, now);
      report.counts = hostStatusCounts(store, now);
      report.violations = checkInvariants(store);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      report.checkError = message.replace(/\s+/g, " ").slice(0, 300);
    }
    report.ok = report.integrity.length === 0 && report.checkError === null &&
      report.violations.length === 0 && !report.modes.some((m) => m.blocking) &&
      report.configProblem === null;
    return report;
  } finally {
    closeStateStore(store);
  }
}

/**
 * A few lines for people; `--json` prints the report object instead. `answering`: whether a host
 * accepted a connection on the socket (the CLI probes it; the state alone cannot tell).
 */
export function formatDoctorReport(report: DoctorReport, answering?: boolean): string {
  const lines = [`State file: ${report.file}`];
  const schema = `${report.identity} v${report.schemaVersion}, digest ` +
    `${report.ddlDigest.slice(0, DDL_DIGEST_PREFIX_LENGTH)}…`;
  if (report.openError) {
    // The problem first: the schema line is what this build expects, not what the file holds.
    lines.push(`Problem: ${report.openError}`);
    for (const mode of report.modes) lines.push(`Mode: ${mode.note}`);
    if (report.configProblem) lines.push(configLine(report));
    lines.push(`This build reads: ${schema}`);
    return lines.join("\n");
  }
  lines.push(`Schema: ${schema}`);
  for (const mode of report.modes) lines.push(`Mode: ${mode.note}`);
  if (report.configProblem) lines.push(configLine(report));
  if (report.integrity.length > 0) {
    lines.push(`Integrity: damaged; SQLite's integrity_check reports:`);
    for (const problem of report.integrity) lines.push(`  ${problem}`);
  } else {
    lines.push("Integrity: ok");
  }
  if (report.checkError) lines.push(`Checks stopped: ${report.checkError}`);
  if (report.integrity.length > 0 || report.checkError) {
    lines.push(
      `The host refuses a damaged database. Stop the host, then back it up and reset with ` +
        `\`mv ${report.file} ${report.file}.bak\` (also move any -wal and -shm file) and start again; ` +
        salvageHint(`${report.file}.bak`),
    );
  }
  if (report.checkError) return lines.join("\n");
  if (report.hostEpoch) {
    lines.push(`Host epoch: ${report.hostEpoch.epoch} (${hostState(report.hostEpoch, answering)})`);
  } else {
    lines.push("Host epoch: none yet");
  }
  if (report.counts) {
    const c = report.counts;
    lines.push(
      `Runs: ${c.queued} queued, ${c.running} running, ${c.parked} parked, ${c.waiting} waiting ` +
        `(${c.paused} paused, ${c.blocked} blocked); ${c.activeWorkers} active workers, ` +
        `${c.expiredClaims} expired claims, ${c.pendingInteractions} pending interactions, ` +
        `${c.ambiguousEffects} ambiguous effects`,
    );
  }
  if (report.violations.length === 0) {
    lines.push("Invariants: all hold");
  } else {
    lines.push(`Invariants: ${report.violations.length} violated`);
    for (const v of report.violations.slice(0, 50)) {
      lines.push(`  ${v.code}${v.runId ? ` run ${v.runId}` : ""}: ${v.detail}`);
    }
    if (report.violations.length > 50) lines.push(`  … ${report.violations.length - 50} more`);
  }
  return lines.join("\n");
}

function configLine(report: DoctorReport): string {
  const file = join(dirname(report.file), "config.json");
  return `Config: ${report.configProblem}; fix ${file} or move it away ` +
    "(every start and prune refuses it meanwhile)";
}

function hostState(host: NonNullable<DoctorReport["hostEpoch"]>, answering?: boolean): string {
  if (!host.live || host.leaseUntil === null) return "not running";
  if (answering) return "running";
  const until = `lease held until ${new Date(host.leaseUntil).toISOString()}`;
  // A host killed without releasing its claim: the lease runs on, but nothing serves the socket.
  return answering === false ? `${until}, host not answering` : until;
}

/** The state directory, the database and its `-wal`/`-shm` files against the mode rule. */
function modeNotes(stateDir: string): { note: string; blocking: boolean }[] {
  const notes: { note: string; blocking: boolean }[] = [];
  const modeOf = (path: string): number | null => {
    try {
      return statSync(path).mode & 0o777;
    } catch {
      return null;
    }
  };
  const octal = (mode: number) => mode.toString(8).padStart(4, "0");
  // A file where the directory should be: its mode is beside the point (the open error says it).
  const dir = isDirectory(stateDir) ? modeOf(stateDir) : null;
  if (dir !== null && (dir & 0o077) !== 0) {
    notes.push({
      note: `state directory is ${octal(dir)}; the host narrows it to 0700 when it starts`,
      blocking: false,
    });
  }
  const file = join(stateDir, STATE_FILE_NAME);
  const db = modeOf(file);
  if (db !== null && (db & 0o600) !== 0o600) {
    notes.push({
      note: `${STATE_FILE_NAME} is ${octal(db)}, which the host cannot write: run ` +
        `\`chmod 600 ${file}\``,
      blocking: true,
    });
  } else if (db !== null && (db & 0o077) !== 0) {
    notes.push({
      note: `${STATE_FILE_NAME} is ${octal(db)}; the host narrows it to 0600 when it starts`,
      blocking: false,
    });
  }
  for (const suffix of ["-wal", "-shm"]) {
    const mode = modeOf(sqliteFilePath(file) + suffix);
    if (mode !== null && mode !== 0o600) {
      notes.push({
        note: `${STATE_FILE_NAME}${suffix} is ${
          octal(mode)
        }; the host sets it to 0600 when it starts`,
        blocking: false,
      });
    }
  }
  return notes;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
