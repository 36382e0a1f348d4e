import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock } from "../../src/base/clock.ts";
import { formatDoctorReport, runDoctor } from "../../src/state/doctor.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { closeStateStore } from "../../src/state/store.ts";
import { enqueue, launchWithAttempt, openFixture, tempDir } from "../support/state-store.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe("runDoctor()", () => {
  it("reports a healthy database read-only, with counts and no private data", () => {
    const f = openFixture();
    dirs.push(f.dir);
    const secret = "/home/someone/secret-project";
    enqueue(f.store, { projectPath: secret, input: { prompt: "private prompt" } });
    launchWithAttempt(f.store, enqueue(f.store));
    closeStateStore(f.store);
    const report = runDoctor({ stateDir: join(f.dir, "state"), clock: new FakeClock() });
    expect(report).toMatchObject({
      ok: true,
      openError: null,
      violations: [],
      counts: { queued: 1, running: 1, activeWorkers: 1 },
    });
    const text = formatDoctorReport(report);
    expect(text).toContain("Invariants: all hold");
    expect(text).toContain("1 queued, 1 running");
    for (const out of [text, JSON.stringify(report)]) {
      expect(out).not.toContain(secret);
      expect(out).not.toContain("private prompt");
      expect(out).not.toContain("token-");
    }
  });

  it("finds violated invariants and names them", () => {
    const f = openFixture();
    dirs.push(f.dir);
    const runId = enqueue(f.store);
    // Damage the projections the way a buggy writer could (bypassing the transitions).
    f.store.db.exec(`UPDATE run_queue SET state = 'running' WHERE run_id = '${runId}'`);
    // An event past a gap: the revision (newest seq, 5) has no events 2..4 nor their deltas.
    f.store.db.exec(
      "INSERT INTO events (event_key, run_id, seq, type, run_revision, payload_json, at) " +
        `SELECT run_no * 4294967296 + 5, run_id, 5, 'x', 5, '{}', 0 FROM runs WHERE run_id = '${runId}'`,
    );
    const codes = checkInvariants(f.store).map((v) => v.code).sort();
    expect(codes).toEqual(["revisionMismatch", "runQueueMismatch", "viewerDeltaMismatch"]);
    closeStateStore(f.store);
    const report = runDoctor({ stateDir: join(f.dir, "state") });
    expect(report.ok).toBe(false);
    expect(report.violations.map((v) => v.code)).toContain("runQueueMismatch");
    expect(formatDoctorReport(report)).toMatch(
      /Invariants: \d+ violated\n {2}runQueueMismatch run/,
    );
  });

  it("finds events keyed outside their run's key range", () => {
    const f = openFixture();
    dirs.push(f.dir);
    enqueue(f.store);
    const runId = enqueue(f.store);
    expect(checkInvariants(f.store)).toEqual([]);
    // A run renumbered behind its events' backs: they no longer lie in its key range.
    f.store.db.exec(`UPDATE runs SET run_no = 99 WHERE run_id = '${runId}'`);
    const codes = checkInvariants(f.store).map((v) => v.code).sort();
    expect(codes).toEqual(["eventKeyMismatch", "revisionMismatch", "viewerDeltaMismatch"]);
    closeStateStore(f.store);
  });

  it("explains a missing or unreadable database instead of throwing", () => {
    const dir = tempDir();
    dirs.push(dir);
    const report = runDoctor({ stateDir: dir });
    expect(report.ok).toBe(false);
    expect(report.openError).toMatch(/no state database yet/);
    // The problem comes first; the schema line after it is what this build expects.
    expect(formatDoctorReport(report)).toMatch(
      /^State file: .*\nProblem: .*no state database yet.*\nThis build reads: pi-workflows-state v1, digest sha256:[0-9a-f]+…$/,
    );
  });

  it("words the host epoch by what the lease and the socket say", () => {
    const f = openFixture();
    dirs.push(f.dir);
    closeStateStore(f.store);
    const report = runDoctor({ stateDir: join(f.dir, "state") });
    const epochLine = (answering?: boolean) =>
      formatDoctorReport(report, answering).split("\n").find((l) => l.startsWith("Host epoch"));
    report.hostEpoch = { epoch: 4, live: true, leaseUntil: Date.UTC(2026, 0, 2, 3, 4, 5) };
    expect(epochLine(true)).toBe("Host epoch: 4 (running)");
    expect(epochLine(false)).toBe(
      "Host epoch: 4 (lease held until 2026-01-02T03:04:05.000Z, host not answering)",
    );
    expect(epochLine()).toBe("Host epoch: 4 (lease held until 2026-01-02T03:04:05.000Z)");
    report.hostEpoch = { epoch: 4, live: false, leaseUntil: null };
    expect(epochLine(true)).toBe("Host epoch: 4 (not running)");
  });
});
