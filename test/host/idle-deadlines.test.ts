/**
 * Many runs waiting at a human decision, each with a default pending, cost an idle host nothing
 * measurable: the deadline timer holds one timer for the earliest, so CPU time and wake-ups match
 * a host with nothing to wait for (`npm run bench -- idle-deadlines` reports the figures).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  type HostProcess,
  idleUsage,
  seedWaitingDecisions,
  startHost,
} from "../bench/_waiting-host.ts";
import { waitFor } from "../support/host.ts";

const root = mkdtempSync(join(tmpdir(), "pwh-idle-"));
const hosts: HostProcess[] = [];
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()));
  rmSync(root, { recursive: true, force: true });
});

const WINDOW_MS = 3000;

async function measure(stateDir: string) {
  // No lease renewal in the window (TTL 10 min: renewal every 200 s). A renewal's commit is a
  // few wake-ups while it syncs, every 5 s by default: it fell in one host's 3 s window and not
  // in the other's, as their start-ups (the seeded one's is longer) shifted the phases.
  const host = await startHost(stateDir, root, { PI_WORKFLOWS_HOST_CLAIM_TTL_MS: "600000" });
  hosts.push(host);
  try {
    // Each host's first retention pass (at its first tick with no client and no worker, then
    // every 6 hours) ends before the window: a cost once per interval, not the deadline timer's.
    await waitFor(
      () => host.stderr().includes("retention.pass"),
      () => `the host's first retention pass: ${host.stderr().slice(-300)}`,
      30_000,
      50,
    );
    return await idleUsage(host.child.pid!, WINDOW_MS);
  } finally {
    await host.stop();
  }
}

describe("an idle host with 1,000 waiting decisions", () => {
  it("uses no more CPU and wakes no more often than one with none", async () => {
    const seeded = join(root, "seeded");
    seedWaitingDecisions(seeded, 1000);
    // Both windows at once: the same minutes of a shared machine for each, and half the time.
    const [none, waiting] = await Promise.all([measure(join(root, "empty")), measure(seeded)]);
    // Polling every 500 ms would add 6 wake-ups per window and ~13 ms of parsing per poll.
    expect(waiting.wakeups).toBeLessThanOrEqual(none.wakeups + 2);
    expect(waiting.cpuMs).toBeLessThanOrEqual(none.cpuMs + 30);
  }, 60_000);
});
