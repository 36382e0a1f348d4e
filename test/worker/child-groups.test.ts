/**
 * Durable records of registered child groups: recovery signals a recorded group only while its
 * leader runs with the exact recorded start time (a reused PID is never signalled), and removes
 * every record afterwards.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  childGroupsFileFor,
  reapRecordedChildGroups,
  saveChildGroups,
} from "../../src/host/supervision/child-groups.ts";
import { readProcessIdentity } from "../../src/host/supervision/process-identity.ts";
import { waitUntil } from "../../src/host/supervision/stop-group.ts";

const dirs: string[] = [];
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function liveGroupLeader() {
  const child = spawn("sleep", ["30"], { detached: true, stdio: "ignore" });
  children.push(child);
  const identity = readProcessIdentity(child.pid!);
  if (!identity) throw new Error("sleep did not start");
  return identity;
}

describe("recorded child groups", () => {
  it("keeps one 0600 file per epoch, removed when the set is empty", () => {
    const dir = mkdtempSync(join(tmpdir(), "piw-groups-"));
    dirs.push(dir);
    const file = childGroupsFileFor(join(dir, "epoch-1.out"));
    expect(file).toBe(join(dir, "epoch-1.groups"));
    saveChildGroups(file, [{ pid: 12, startTime: "34" }, { pid: 56, startTime: "78" }]);
    expect(readFileSync(file, "utf8")).toBe("12:34\n56:78\n");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    saveChildGroups(file, []);
    expect(existsSync(file)).toBe(false);
  });

  it("reaps only exact identities at recovery and removes the records", async () => {
    const dir = mkdtempSync(join(tmpdir(), "piw-groups-"));
    dirs.push(dir);
    const unrelated = liveGroupLeader();
    const ours = liveGroupLeader();
    // The unrelated process holds a recorded PID with another start time (PID reuse), and a
    // corrupt line is ignored.
    writeFileSync(
      join(dir, "old.groups"),
      `${unrelated.pid}:${BigInt(unrelated.startTime) + 1n}\nnot an identity\n`,
    );
    saveChildGroups(join(dir, "older.groups"), [ours]);
    expect(await reapRecordedChildGroups(dir, 200)).toBe(1);
    expect(await waitUntil(() => readProcessIdentity(ours.pid) === null, 5_000)).toBe(true);
    expect(readProcessIdentity(unrelated.pid)).toEqual(unrelated);
    expect(existsSync(join(dir, "old.groups"))).toBe(false);
    expect(existsSync(join(dir, "older.groups"))).toBe(false);
  });
});
