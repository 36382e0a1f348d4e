/**
 * The durable registry of child groups (`worker_child_groups`): registration needs the live run
 * claim and renews it; unregistering needs none; recovery signals a recorded group only while
 * its leader is there with the exact recorded start time (a zombie leader included; a reused PID
 * is never signalled), and removes every record afterwards but those whose stop gave up. The
 * same for the host's validation and resolver children (`host_children`).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import {
  reapRecordedChildGroups,
  reapRecordedHostChildren,
} from "../../../src/host/supervision/child-groups.ts";
import { createProcessRegistry } from "../../../src/host/supervision/process-registry.ts";
import { listHostChildren, recordHostChild } from "../../../src/state/transitions/host-children.ts";
import {
  type ProcessIdentity,
  readProcessIdentityNow,
  readProcessStatNow,
} from "../../../src/os/process-identity.ts";
import { processBackend, useProcessBackend } from "../../../src/os/process-backend.ts";
import { ProcessTableUnavailable } from "../../../src/os/process-table.ts";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { renewedExpiry } from "../../../src/state/claims.ts";
import { ClaimLostError } from "../../../src/state/errors.ts";
import { queryOne } from "../../../src/state/statements.ts";
import {
  listChildGroups,
  registerChildGroup,
  unregisterChildGroup,
} from "../../../src/state/transitions/child-groups.ts";
import { completeRun } from "../../../src/state/transitions/run-end.ts";
import { enqueue, type Fixture, launch, openFixture, TTL } from "../../support/state-store.ts";

const fixtures: Fixture[] = [];
const children: ChildProcess[] = [];
/** Processes the tests started but not as direct children (stopped by exact identity). */
const strays: ProcessIdentity[] = [];
let restoreBackend: (() => void) | null = null;
afterEach(() => {
  restoreBackend?.();
  restoreBackend = null;
  for (const stray of strays.splice(0)) {
    if (readProcessIdentityNow(stray.pid)?.startTime === stray.startTime) {
      process.kill(stray.pid, "SIGKILL");
    }
  }
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const fixture of fixtures.splice(0)) fixture.close();
});

function liveGroupLeader() {
  const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  children.push(child);
  const identity = readProcessIdentityNow(child.pid!);
  if (!identity) throw new Error("sleep did not start");
  return identity;
}

/**
 * A group whose leader is a zombie and whose other member (`sleep`) lives: the leader starts its
 * own session and exits, and its parent, exec'd into another `sleep`, never reaps it.
 */
async function zombieLedGroup(): Promise<{ leader: ProcessIdentity; member: ProcessIdentity }> {
  const parent = spawn("sh", ["-c", 'setsid sh -c "sleep 30 & echo \\$!" & exec sleep 30'], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  children.push(parent);
  let out = "";
  parent.stdout.on("data", (chunk) => (out += chunk));
  expect(await waitUntil(() => /^\d+\n/.test(out), 5_000)).toBe(true);
  const member = readProcessStatNow(Number(out.trim()))!;
  strays.push({ pid: member.pid, startTime: member.startTime });
  const leader = readProcessStatNow(member.pgrp);
  expect(await waitUntil(() => readProcessStatNow(member.pgrp)?.state === "Z", 5_000)).toBe(true);
  return {
    leader: { pid: leader!.pid, startTime: leader!.startTime },
    member: { pid: member.pid, startTime: member.startTime },
  };
}

/** The process table reads once (recovery's own read); every later read fails. */
function tableOnlyOnce(): void {
  const real = processBackend();
  let reads = 0;
  restoreBackend = useProcessBackend({
    ...real,
    table: (options) =>
      reads++ === 0 ? real.table(options) : Promise.reject(new ProcessTableUnavailable("no table")),
  });
}

function launched() {
  const f = openFixture();
  fixtures.push(f);
  const runId = enqueue(f.store);
  const claim = launch(f.store, runId);
  const { worker_epoch: workerEpoch } = queryOne<{ worker_epoch: string }>(
    f.store,
    "SELECT worker_epoch FROM run_workers WHERE run_id = :runId",
    { runId },
  )!;
  return { f, runId, claim, workerEpoch };
}

describe("recorded child groups", () => {
  it("registers under the live claim (renewing it) and unregisters without one", () => {
    const { f, claim, workerEpoch } = launched();
    f.clock.advance(TTL / 2);
    registerChildGroup(f.store, claim, { workerEpoch, pid: 12, startTime: "34" });
    registerChildGroup(f.store, claim, { workerEpoch, pid: 12, startTime: "34" });
    registerChildGroup(f.store, claim, { workerEpoch, pid: 56, startTime: "78" });
    expect(listChildGroups(f.store)).toEqual([
      { workerEpoch, pid: 12, startTime: "34" },
      { workerEpoch, pid: 56, startTime: "78" },
    ]);
    const lease = queryOne<{ expires_at: number }>(
      f.store,
      "SELECT expires_at FROM leases WHERE run_id IS NOT NULL",
    )!;
    expect(lease.expires_at).toBe(renewedExpiry(f.clock.now(), TTL));
    // After a terminal commit released the claim, cleanup still works.
    completeRun(f.store, claim, { output: null });
    expect(unregisterChildGroup(f.store, { workerEpoch, pid: 12, startTime: "34" })).toBe(true);
    expect(unregisterChildGroup(f.store, { workerEpoch, pid: 12, startTime: "34" })).toBe(false);
    expect(unregisterChildGroup(f.store, { workerEpoch, pid: 56, startTime: "78" })).toBe(true);
    expect(listChildGroups(f.store)).toEqual([]);
  });

  it("refuses a registration once the claim expired or was released", () => {
    const { f, claim, workerEpoch } = launched();
    f.clock.advance(TTL + 1);
    expect(() => registerChildGroup(f.store, claim, { workerEpoch, pid: 12, startTime: "34" }))
      .toThrow(ClaimLostError);
    expect(listChildGroups(f.store)).toEqual([]);
  });

  it("reaps only exact identities at recovery and removes the records", async () => {
    const { f, claim, workerEpoch } = launched();
    const unrelated = liveGroupLeader();
    const ours = liveGroupLeader();
    // The unrelated process holds a recorded PID with another start time (PID reuse).
    registerChildGroup(f.store, claim, {
      workerEpoch,
      pid: unrelated.pid,
      startTime: String(BigInt(unrelated.startTime) + 1n),
    });
    registerChildGroup(f.store, claim, { workerEpoch, ...ours });
    expect(await reapRecordedChildGroups(f.store, 200)).toBe(1);
    expect(await waitUntil(() => readProcessIdentityNow(ours.pid) === null, 5_000)).toBe(true);
    expect(readProcessIdentityNow(unrelated.pid)).toEqual(unrelated);
    expect(listChildGroups(f.store)).toEqual([]);
  });
});

describe("recorded host children (validation children, resolvers)", () => {
  it("are named by the registry while they live; workers are not (run_workers names them)", () => {
    const f = openFixture();
    fixtures.push(f);
    const failures: unknown[] = [];
    const registry = createProcessRegistry({
      store: f.store,
      onWriteFailed: (error) => failures.push(error),
    });
    const validator = { pid: 12, startTime: "34" };
    const resolver = { pid: 56, startTime: "78" };
    registry.register({ identity: validator, kind: "validator", runId: "run-1" });
    registry.register({ identity: resolver, kind: "resolver", runId: null });
    registry.register({ identity: { pid: 90, startTime: "12" }, kind: "worker", runId: "run-2" });
    expect(listHostChildren(f.store)).toEqual([
      { ...validator, kind: "validator", runId: "run-1" },
      { ...resolver, kind: "resolver", runId: null },
    ]);
    registry.unregister(validator);
    registry.unregister({ pid: 90, startTime: "12" });
    expect(listHostChildren(f.store)).toEqual([{ ...resolver, kind: "resolver", runId: null }]);
    expect(registry.size()).toBe(1);
    expect(failures).toEqual([]);
  });

  it("reaps only exact identities at recovery and removes the records", async () => {
    const f = openFixture();
    fixtures.push(f);
    const unrelated = liveGroupLeader();
    const ours = liveGroupLeader();
    recordHostChild(f.store, {
      pid: unrelated.pid,
      startTime: String(BigInt(unrelated.startTime) + 1n),
      kind: "validator",
      runId: "run-1",
    });
    recordHostChild(f.store, { ...ours, kind: "resolver", runId: null });
    expect(await reapRecordedHostChildren(f.store, 200)).toBe(1);
    expect(await waitUntil(() => readProcessIdentityNow(ours.pid) === null, 5_000)).toBe(true);
    expect(readProcessIdentityNow(unrelated.pid)).toEqual(unrelated);
    expect(listHostChildren(f.store)).toEqual([]);
  });

  it("stops the group of a zombie leader with the exact identity", async () => {
    const f = openFixture();
    fixtures.push(f);
    const { leader, member } = await zombieLedGroup();
    recordHostChild(f.store, { ...leader, kind: "validator", runId: "run-1" });
    expect(await reapRecordedHostChildren(f.store, 200)).toBe(1);
    expect(await waitUntil(() => readProcessIdentityNow(member.pid) === null, 5_000)).toBe(true);
    expect(listHostChildren(f.store)).toEqual([]);
  });

  it("keeps the record of a group whose stop gave up, for the next start", async () => {
    const f = openFixture();
    fixtures.push(f);
    const ours = liveGroupLeader();
    const row = { ...ours, kind: "resolver" as const, runId: null };
    recordHostChild(f.store, row);
    tableOnlyOnce();
    expect(await reapRecordedHostChildren(f.store, 0)).toBe(1);
    expect(readProcessIdentityNow(ours.pid)).toEqual(ours);
    expect(listHostChildren(f.store)).toEqual([row]);
    restoreBackend!();
    restoreBackend = null;
    expect(await reapRecordedHostChildren(f.store, 200)).toBe(1);
    expect(await waitUntil(() => readProcessIdentityNow(ours.pid) === null, 5_000)).toBe(true);
    expect(listHostChildren(f.store)).toEqual([]);
  });
});
