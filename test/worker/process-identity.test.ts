import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import {
  formatStartIdentity,
  groupHasLiveMembers,
  isSameProcessAlive,
  parseStartIdentity,
  readProcessIdentity,
  readProcessStat,
  signalGroup,
} from "../../src/os/process-identity.ts";
import { createProcessRegistry } from "../../src/host/supervision/process-registry.ts";
import { isGone, stopProcessGroup, waitUntil } from "../../src/os/stop-group.ts";

const started: ChildProcess[] = [];

function startDetached(script: string): ChildProcess {
  const child = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
  started.push(child);
  return child;
}

afterEach(() => {
  for (const child of started.splice(0)) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

function childrenOf(pid: number): number[] {
  return readdirSync("/proc")
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((p) => readProcessStat(p)?.ppid === pid);
}

describe("readProcessIdentity()", () => {
  it("reads this process with a numeric start time", () => {
    const me = readProcessIdentity(process.pid);
    expect(me?.pid).toBe(process.pid);
    expect(me?.startTime).toMatch(/^\d+$/);
    expect(isSameProcessAlive(me!)).toBe(true);
  });

  it("returns null for a PID that does not exist and for nonsense", () => {
    expect(readProcessIdentity(2 ** 22 + 7)).toBeNull();
    expect(readProcessIdentity(-1)).toBeNull();
    expect(readProcessIdentity(1.5)).toBeNull();
  });

  it("treats a zombie as dead", async () => {
    // The backgrounded sleep's parent execs into a process that never reaps it.
    const child = startDetached("sleep 0.05 & exec sleep 300");
    let zombie = 0;
    const found = await waitUntil(() => {
      zombie = childrenOf(child.pid!).find((p) => readProcessStat(p)?.state === "Z") ?? 0;
      return zombie !== 0;
    }, 5_000);
    expect(found).toBe(true);
    expect(readProcessStat(zombie)?.state).toBe("Z");
    expect(readProcessIdentity(zombie)).toBeNull();
  });

  it("round-trips the stored start identity text", () => {
    const me = readProcessIdentity(process.pid)!;
    expect(parseStartIdentity(formatStartIdentity(me))).toEqual(me);
    expect(parseStartIdentity("garbage")).toBeNull();
    expect(parseStartIdentity(null)).toBeNull();
  });
});

describe("signalGroup()", () => {
  it("never signals a live unrelated process that reuses a recorded PID", async () => {
    const unrelated = startDetached("exec sleep 300");
    await waitUntil(() => readProcessStat(unrelated.pid!)?.state !== undefined, 5_000);
    const real = readProcessIdentity(unrelated.pid!)!;
    // A stale record: same PID, but the start time of some earlier process.
    const stale = { pid: real.pid, startTime: String(BigInt(real.startTime) - 1n) };
    expect(signalGroup(stale, "SIGKILL")).toBe(false);
    expect(isGone(stale)).toBe(true);
    expect(isSameProcessAlive(real)).toBe(true);
    expect(signalGroup(real, "SIGKILL")).toBe(true);
    expect(await waitUntil(() => !isSameProcessAlive(real), 5_000)).toBe(true);
  });

  it("refuses a process that does not lead its own group", async () => {
    // Not detached: the child stays in the test runner's group, so it leads none.
    const child = spawn("sleep", ["300"], { stdio: "ignore" });
    try {
      await waitUntil(() => readProcessIdentity(child.pid!) !== null, 5_000);
      const identity = readProcessIdentity(child.pid!)!;
      expect(signalGroup(identity, "SIGKILL")).toBe(false);
      expect(isSameProcessAlive(identity)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("stopProcessGroup()", () => {
  it("terminates the leader and its grandchildren with SIGTERM", async () => {
    const child = startDetached("sleep 300 & sleep 300; wait");
    await waitUntil(() => childrenOf(child.pid!).length >= 2, 5_000);
    const leader = readProcessIdentity(child.pid!)!;
    const result = await stopProcessGroup(leader, { graceMs: 3_000 });
    expect(result).toBe("terminated");
    expect(isGone(leader)).toBe(true);
  });

  it("escalates to SIGKILL when the group ignores SIGTERM", async () => {
    const child = startDetached("trap '' TERM; sleep 300 & sleep 300; wait");
    await waitUntil(() => childrenOf(child.pid!).length >= 2, 5_000);
    const leader = readProcessIdentity(child.pid!)!;
    const t0 = Date.now();
    const result = await stopProcessGroup(leader, { graceMs: 200 });
    expect(result).toBe("killed");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
    expect(isGone(leader)).toBe(true);
  });

  it("sees a group's live member after its leader exited, and none once it is gone", async () => {
    // The leader exits at once; its background sleep stays in the group (reparented).
    const child = startDetached("sleep 300 & exit 0");
    const pgid = child.pid!;
    await new Promise((resolve) => child.once("exit", resolve));
    expect(groupHasLiveMembers(pgid)).toBe(true);
    const leader = { pid: pgid, startTime: "0" };
    expect(isGone(leader)).toBe(false);
    process.kill(-pgid, "SIGKILL");
    expect(await waitUntil(() => !groupHasLiveMembers(pgid), 5_000)).toBe(true);
    expect(isGone(leader)).toBe(true);
  });

  it("reports alreadyGone for a process that exited", async () => {
    const child = startDetached("exit 0");
    const identity = { pid: child.pid!, startTime: "0" };
    await new Promise((resolve) => child.once("exit", resolve));
    expect(await stopProcessGroup(identity, { graceMs: 100 })).toBe("alreadyGone");
  });
});

describe("createProcessRegistry()", () => {
  it("keys entries by PID and start identity and stops every registered group", async () => {
    const child = startDetached("sleep 300 & sleep 300; wait");
    await waitUntil(() => childrenOf(child.pid!).length >= 2, 5_000);
    const identity = readProcessIdentity(child.pid!)!;
    const registry = createProcessRegistry();
    registry.register({ identity, kind: "worker", runId: "run-1" });
    expect(registry.has(identity)).toBe(true);
    expect(registry.has({ pid: identity.pid, startTime: "1" })).toBe(false);
    expect(registry.size()).toBe(1);
    await registry.stopAll(1_000);
    expect(isGone(identity)).toBe(true);
    registry.unregister(identity);
    expect(registry.size()).toBe(0);
  });
});
