/**
 * ensureHost() with its default start command against the real host (`pi-workflows host start`
 * through self-launch), in a temp state directory. The host itself is tested in test/host.
 */
import { afterEach, expect, test } from "vitest";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHostClient } from "../../src/client/host-client.ts";
import { removeTempRoot } from "../support/temp-root.ts";
import { waitUntil } from "../support/wait.ts";

let dir: string | undefined;

/** Processes whose environment names our temp state dir: only ones this test started. */
function ownProcesses(stateDir: string): number[] {
  const marker = `PI_WORKFLOWS_STATE_DIR=${stateDir}\0`;
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (`${readFileSync(`/proc/${entry}/environ`, "latin1")}\0`.includes(marker)) {
        pids.push(Number(entry));
      }
    } catch {
      // Gone, or not ours to read.
    }
  }
  return pids;
}

afterEach(async () => {
  if (!dir) return;
  await removeTempRoot(dir);
  dir = undefined;
});

test("starts the real host on demand, then talks to it", async () => {
  dir = mkdtempSync(join(tmpdir(), "piw-real-"));
  const env = {
    ...process.env,
    PI_WORKFLOWS_STATE_DIR: dir,
    PI_CODING_AGENT_DIR: join(dir, "agent"),
  };
  const client = createHostClient({ env, startTimeoutMs: 30_000 });
  try {
    const status = await client.call("host.status");
    expect(status.state).toBe("running");
    expect(status.epoch).toBeGreaterThanOrEqual(1);
    expect(existsSync(join(dir, "host.sock"))).toBe(true);
    const unknownRun = await client.request("run.status", { runId: "run-missing" });
    expect(unknownRun.outcome).toBe("notFound");
    expect(await client.call("host.stop")).toEqual({ stopping: true });
  } finally {
    client.close();
  }
  expect(await waitUntil(() => ownProcesses(dir!).length === 0, 15_000)).toBe(true);
});
