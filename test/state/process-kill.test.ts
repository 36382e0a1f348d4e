/**
 * Real crash: a child process runs lifecycles in a loop and is killed with SIGKILL at seeded
 * points. After each kill the database opens cleanly, every transition the child reported as
 * committed is there, and every invariant holds.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun } from "../../src/state/queries.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { tempDir } from "../support/state-store.ts";

const writer = fileURLToPath(new URL("./fixtures/crash-writer.ts", import.meta.url));
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) {
    if (c.exitCode === null && c.signalCode === null && c.pid) process.kill(c.pid, "SIGKILL");
  }
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Starts the writer and kills it once it reported `lines` commits; returns the last one. */
function runAndKill(stateDir: string, lines: number): Promise<{ runId: string; revision: number }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [writer, stateDir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    let seen = 0;
    let last: { runId: string; revision: number } | null = null;
    let buffer = "";
    let stderr = "";
    const deadline = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`Writer did not reach ${lines} commits in time: ${stderr.slice(0, 500)}`));
    }, 20_000);
    child.stderr!.on("data", (d) => (stderr += d));
    child.stdout!.on("data", (chunk) => {
      buffer += chunk;
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const [, runId, revision] = buffer.slice(0, nl).split(" ");
        buffer = buffer.slice(nl + 1);
        last = { runId: runId!, revision: Number(revision) };
        if (++seen === lines) child.kill("SIGKILL");
      }
    });
    child.on("exit", (_code, signal) => {
      clearTimeout(deadline);
      if (signal !== "SIGKILL" || !last) {
        reject(new Error(`Writer ended without being killed: ${stderr.slice(0, 500)}`));
      } else resolve(last);
    });
  });
}

describe("SIGKILL during lifecycle writes", () => {
  it("leaves a consistent database holding every reported commit", async () => {
    const dir = tempDir();
    dirs.push(dir);
    const stateDir = join(dir, "state");
    for (const lines of [7, 23, 41, 58, 90]) {
      const last = await runAndKill(stateDir, lines);
      const store = openStateStore({ stateDir, clock: new FakeClock(), ids: sequentialIds() });
      try {
        expect(readRun(store, last.runId)!.revision).toBeGreaterThanOrEqual(last.revision);
        expect(checkInvariants(store)).toEqual([]);
      } finally {
        closeStateStore(store);
      }
    }
  });
});
