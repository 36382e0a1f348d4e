import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import {
  formatStartIdentity,
  groupHasLiveMembers,
  isSameProcessAlive,
  parseStartIdentity,
  processTable,
  readProcessIdentity,
  readProcessStat,
  signalGroup,
} from "../../../src/os/process-identity.ts";
import { createProcessRegistry } from "../../../src/host/supervision/process-registry.ts";
import { isGone, stopProcessGroup, waitUntil } from "../../../src/os/stop-group.ts";

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

async function childrenOf(pid: number): Promise<number[]> {
  const table = await processTable({ fresh: true });
  return [...table.all()].filter((stat) => stat.ppid === pid).map((stat) => stat.pid);
}

describe("readProcessIdentity()", () => {
  it("reads this process with a numeric start time", async () => {
    const me = await readProcessIdentity(process.pid);
    expect(me?.pid).toBe(process.pid);
    expect(me?.startTime).toMatch(/^\d+$/);
    expect(await isSameProcessAlive(me!)).toBe(true);
  });

  it("returns null for a PID that does not exist and for nonsense", async () => {
    expect(await readProcessIdentity(2 ** 22 + 7)).toBeNull();
    expect(await readProcessIdentity(-1)).toBeNull();
    expect(await readProcessIdentity(1.5)).toBeNull();
  });

  it("treats a zombie as dead", async () => {
    // The backgrounded sleep's parent execs into a process that never reaps it.
    const child = startDetached("sleep 0.05 & exec sleep 300");
    let zombie = 0;
    const found = await waitUntil(async () => {
      const table = await processTable({ fresh: true });
      zombie = (await childrenOf(child.pid!)).find((p) => table.stat(p)?.state === "Z") ?? 0;
      return zombie !== 0;
    }, 5_000);
    expect(found).toBe(true);
    expect((await readProcessStat(zombie))?.state).toBe("Z");
    expect(await readProcessIdentity(zombie)).toBeNull();
  });

  it("round-trips the stored start identity text", async () => {
    const me = (await readProcessIdentity(process.pid))!;
    expect(parseStartIdentity(formatStartIdentity(me))).toEqual(me);
    expect(parseStartIdentity("garbage")).toBeNull();
    expect(parseStartIdentity(null)).toBeNull();
  });
});

describe("signalGroup()", () => {
  it("never signals a live unrelated process that reuses a recorded PID", async () => {
    const unrelated = startDetached("exec sleep 300");
    await waitUntil(
      async () => (await readProcessStat(unrelated.pid!))?.state !== undefined,
      5_000,
    );
    const real = (await readProcessIdentity(unrelated.pid!))!;
    // A stale record: same PID, but the start time of some earlier process.
    const stale = { pid: real.pid, startTime: String(BigInt(real.startTime) - 1n) };
    expect(await signalGroup(stale, "SIGKILL")).toBe(false);
    expect(await isGone(stale)).toBe(true);
    expect(await isSameProcessAlive(real)).toBe(true);
    expect(await signalGroup(real, "SIGKILL")).toBe(true);
    expect(await waitUntil(async () => !(await isSameProcessAlive(real)), 5_000)).toBe(true);
  });

  it("refuses a process that does not lead its own group", async () => {
    // Not detached: the child stays in the test runner's group, so it leads none.
    const child = spawn("sleep", ["300"], { stdio: "ignore" });
    try {
      await waitUntil(async () => (await readProcessIdentity(child.pid!)) !== null, 5_000);
      const identity = (await readProcessIdentity(child.pid!))!;
      expect(await signalGroup(identity, "SIGKILL")).toBe(false);
      expect(await isSameProcessAlive(identity)).toBe(true);
    } finally {
      child.kill("SIGKILL");
    }
  });
});

describe("stopProcessGroup()", () => {
  it("terminates the leader and its grandchildren with SIGTERM", async () => {
    const child = startDetached("sleep 300 & sleep 300; wait");
    await waitUntil(async () => (await childrenOf(child.pid!)).length >= 2, 5_000);
    const leader = (await readProcessIdentity(child.pid!))!;
    const result = await stopProcessGroup(leader, { graceMs: 3_000 });
    expect(result).toBe("terminated");
    expect(await isGone(leader)).toBe(true);
  });

  it("escalates to SIGKILL when the group ignores SIGTERM", async () => {
    const child = startDetached("trap '' TERM; sleep 300 & sleep 300; wait");
    await waitUntil(async () => (await childrenOf(child.pid!)).length >= 2, 5_000);
    const leader = (await readProcessIdentity(child.pid!))!;
    const t0 = Date.now();
    const result = await stopProcessGroup(leader, { graceMs: 200 });
    expect(result).toBe("killed");
    expect(Date.now() - t0).toBeGreaterThanOrEqual(200);
    expect(await isGone(leader)).toBe(true);
  });

  it("sees a group's live member after its leader exited, and none once it is gone", async () => {
    // The leader exits at once; its background sleep stays in the group (reparented).
    const child = startDetached("sleep 300 & exit 0");
    const pgid = child.pid!;
    await new Promise((resolve) => child.once("exit", resolve));
    expect(await groupHasLiveMembers(pgid)).toBe(true);
    const leader = { pid: pgid, startTime: "0" };
    expect(await isGone(leader)).toBe(false);
    process.kill(-pgid, "SIGKILL");
    expect(await waitUntil(async () => !(await groupHasLiveMembers(pgid)), 5_000)).toBe(true);
    expect(await isGone(leader)).toBe(true);
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
    await waitUntil(async () => (await childrenOf(child.pid!)).length >= 2, 5_000);
    const identity = (await readProcessIdentity(child.pid!))!;
    const registry = createProcessRegistry();
    registry.register({ identity, kind: "worker", runId: "run-1" });
    expect(registry.has(identity)).toBe(true);
    expect(registry.has({ pid: identity.pid, startTime: "1" })).toBe(false);
    expect(registry.size()).toBe(1);
    await registry.stopAll(1_000);
    expect(await isGone(identity)).toBe(true);
    registry.unregister(identity);
    expect(registry.size()).toBe(0);
  });
});
