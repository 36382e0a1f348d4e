/**
 * `pi-workflows doctor`: opens the state read-only, checks identity and DDL digest, runs the
 * invariant checker and reports. The report names the state file and nothing else private (no
 * ids beyond run ids, no payloads).
 */
import { type Clock, randomIds, systemClock } from "./clock.ts";
import { StateOpenError } from "./errors.ts";
import { readHostEpoch } from "./host-claim.ts";
import { checkInvariants, type Violation } from "./invariants.ts";
import { type HostStatusCounts, hostStatusCounts } from "./queries.ts";
import { DDL_DIGEST_PREFIX_LENGTH, ddlDigest, SCHEMA_VERSION, STATE_IDENTITY } from "./schema.ts";
import { closeStateStore, openStateStore, STATE_FILE_NAME } from "./store.ts";
import { join } from "node:path";

export interface DoctorReport {
  /** True when the database opened, matched this build and violates no invariant. */
  ok: boolean;
  file: string;
  identity: string;
  schemaVersion: number;
  ddlDigest: string;
  /** Why the database could not be checked (open error), else null. */
  openError: string | null;
  hostEpoch: { epoch: number; live: boolean } | null;
  counts: HostStatusCounts | null;
  violations: Violation[];
}

export function runDoctor(opts: { stateDir: string; clock?: Clock }): DoctorReport {
  const clock = opts.clock ?? systemClock;
  const report: DoctorReport = {
    ok: false,
    file: join(opts.stateDir, STATE_FILE_NAME),
    identity: STATE_IDENTITY,
    schemaVersion: SCHEMA_VERSION,
    ddlDigest: ddlDigest(),
    openError: null,
    hostEpoch: null,
    counts: null,
    violations: [],
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
    const now = clock.now();
    report.hostEpoch = readHostEpoch(store, now);
    report.counts = hostStatusCounts(store, now);
    report.violations = checkInvariants(store);
    report.ok = report.violations.length === 0;
    return report;
  } finally {
    closeStateStore(store);
  }
}

/** A few lines for people; `--json` prints the report object instead. */
export function formatDoctorReport(report: DoctorReport): string {
  const lines = [`State file: ${report.file}`];
  lines.push(
    `Schema: ${report.identity} v${report.schemaVersion}, digest ` +
      `${report.ddlDigest.slice(0, DDL_DIGEST_PREFIX_LENGTH)}…`,
  );
  if (report.openError) {
    lines.push(`Problem: ${report.openError}`);
    return lines.join("\n");
  }
  if (report.hostEpoch) {
    lines.push(
      `Host epoch: ${report.hostEpoch.epoch} (${report.hostEpoch.live ? "live" : "not running"})`,
    );
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
