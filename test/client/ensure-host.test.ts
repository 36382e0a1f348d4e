import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureHost } from "../../src/client/ensure-host.ts";
import { receiptOf } from "../../src/client/command-receipt.ts";
import type { HostConnection } from "../../src/client/host-connection.ts";
import { HostUnavailableError } from "../../src/protocol/failures.ts";
import { FAKE_EPOCH, type FakeHost, startFakeHost } from "./fixtures/fake-host-server.ts";

const fixture = fileURLToPath(new URL("./fixtures/fake-host-process.ts", import.meta.url));

let dir: string;
const connections: HostConnection[] = [];
let inProcessHost: FakeHost | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "piw-ensure-"));
});

afterEach(async () => {
  for (const connection of connections.splice(0)) connection.close();
  await inProcessHost?.close();
  inProcessHost = undefined;
  for (const name of ["fake-host.pid", "hang.pid"]) {
    const file = join(dir, name);
    if (existsSync(file)) killIfAlive(Number(readFileSync(file, "utf8")));
  }
  rmSync(dir, { recursive: true, force: true });
});

function killIfAlive(pid: number) {
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // Already gone.
  }
}

function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return condition();
}

const fakeStart = (mode: string) => ({ command: process.execPath, args: [fixture, mode, dir] });

describe("ensureHost()", () => {
  test("a running host is used as is; nothing is started", async () => {
    inProcessHost = await startFakeHost(join(dir, "host.sock"));
    const connection = await ensureHost({ stateDir: dir, startCommand: fakeStart("fail") });
    connections.push(connection);
    expect(connection.hostEpoch).toBe(FAKE_EPOCH);
  });

  test("no host: starts one, waits until it answers host.status", async () => {
    const connection = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("start"),
      startTimeoutMs: 20_000,
    });
    connections.push(connection);
    expect(existsSync(join(dir, "fake-host.pid"))).toBe(true);
    const status = receiptOf("host.status", await connection.request("host.status"));
    expect(status.socket).toBe("available");
  });

  test("the start command fails: its one line is in the error", async () => {
    const error = await ensureHost({ stateDir: dir, startCommand: fakeStart("fail") })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(
      /`pi-workflows host start` failed \(exit code 3\): Host start failed: the state directory is locked/,
    );
    expect(error.message).not.toContain("\n");
  });

  test("the host never answers: unavailable at the deadline and the starter is stopped", async () => {
    const started = Date.now();
    const error = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("hang"),
      startTimeoutMs: 1_500,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/did not answer within 1500 ms/);
    expect(Date.now() - started).toBeLessThan(10_000);
    const pidFile = join(dir, "hang.pid");
    expect(await waitFor(() => existsSync(pidFile), 5_000)).toBe(true);
    const pid = Number(readFileSync(pidFile, "utf8"));
    expect(await waitFor(() => !alive(pid), 5_000)).toBe(true);
  });

  test("a start command that cannot be executed", async () => {
    const error = await ensureHost({
      stateDir: dir,
      startCommand: { command: join(dir, "no-such-binary"), args: [] },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/ENOENT/);
  });
});
