/** The host start lock leaves nothing behind: a dead client's draft or set-aside file is swept. */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { START_LOCK_FILE_NAME, tryStartLock } from "../../src/client/start-lock.ts";

const dir = mkdtempSync(join(tmpdir(), "piw-start-lock-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The pid of a process that has exited (its files are a dead writer's). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], {
    encoding: "utf8",
  });
  return Number(child.stdout);
}

describe("host start lock", () => {
  it("removes a dead client's .new and .stale files and keeps a live one's", () => {
    const dead = deadPid();
    const deadDraft = `${START_LOCK_FILE_NAME}.${dead}.new`;
    const deadAside = `${START_LOCK_FILE_NAME}.${dead}.stale`;
    // The parent of this test process is alive for the whole test.
    const liveDraft = `${START_LOCK_FILE_NAME}.${process.ppid}.new`;
    for (const name of [deadDraft, deadAside, liveDraft, "unrelated.new"]) {
      writeFileSync(join(dir, name), "x");
    }
    const lock = tryStartLock(dir);
    expect(lock).not.toBeNull();
    lock!.release();
    expect(existsSync(join(dir, deadDraft))).toBe(false);
    expect(existsSync(join(dir, deadAside))).toBe(false);
    expect(existsSync(join(dir, liveDraft))).toBe(true);
    expect(existsSync(join(dir, "unrelated.new"))).toBe(true);
    // Taking and releasing the lock itself leaves only what was there.
    expect(readdirSync(dir).sort()).toEqual([liveDraft, "unrelated.new"].sort());
  });
});
