import { afterEach, beforeEach, describe, expect, test } from "vitest";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ensureHost, HostStartFailedError, lockProblem } from "../../src/client/ensure-host.ts";
import { START_LOCK_FILE_NAME } from "../../src/client/start-lock.ts";
import { receiptOf } from "../../src/client/command-receipt.ts";
import { createHostClient } from "../../src/client/host-client.ts";
import type { HostConnection } from "../../src/client/host-connection.ts";
import { HostUnavailableError } from "../../src/protocol/failures.ts";
import { FAKE_EPOCH, type FakeHost, startFakeHost } from "./fixtures/fake-host-server.ts";
import { waitUntil } from "../support/wait.ts";

const fixture = fileURLToPath(new URL("./fixtures/fake-host-process.ts", import.meta.url));
const clientFixture = fileURLToPath(new URL("./fixtures/ensure-host-client.ts", import.meta.url));

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
  for (const pid of hostPids()) killIfAlive(pid);
  const hang = join(dir, "hang.pid");
  if (existsSync(hang)) killIfAlive(Number(readFileSync(hang, "utf8")));
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

/** Live processes running the fake host fixture in `mode` for this test's directory. */
function starterPids(mode: string): number[] {
  const wanted = [fixture, mode, dir].join("\0");
  return readdirSync("/proc").filter((name) => /^\d+$/.test(name)).map(Number).filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(wanted) && alive(pid);
    } catch {
      return false;
    }
  });
}

/** The fake hosts started so far (each appends its pid). */
function hostPids(): number[] {
  const file = join(dir, "fake-host.pids");
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8").split("\n").filter((line) => line !== "").map(Number);
}

/** Runs one client process to the end; resolves with its one stdout line. */
function runClient(): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [clientFixture, dir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString("utf8")));
    const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
    child.on("error", reject);
    child.on("exit", () => {
      clearTimeout(timer);
      resolve(out.trim());
    });
  });
}

const fakeStart = (mode: string) => ({ command: process.execPath, args: [fixture, mode, dir] });

describe("ensureHost()", () => {
  test("a start lock that link() cannot make (no hard links) names the filesystem, not the rights", () => {
    const fsError = (syscall: string) =>
      Object.assign(new Error(`EPERM: operation not permitted, ${syscall}`), {
        code: "EPERM",
        syscall,
      });
    expect(lockProblem("/mnt/usb/state", fsError("link"))).toBe(
      "the state directory /mnt/usb/state is on a filesystem without hard links, which the " +
        "host's start lock needs; point PI_WORKFLOWS_STATE_DIR at a local directory",
    );
    expect(lockProblem("/mnt/usb/state", fsError("open"))).toContain("cannot be written (EPERM)");
  });

  test("a running host is used as is; nothing is started", async () => {
    inProcessHost = await startFakeHost(join(dir, "host.sock"));
    const connection = await ensureHost({ stateDir: dir, startCommand: fakeStart("fail") });
    connections.push(connection);
    expect(connection.hostEpoch).toBe(FAKE_EPOCH);
  });

  test("no host: starts one, waits for its ready handshake and its answer", async () => {
    const connection = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("serve"),
      startTimeoutMs: 20_000,
    });
    connections.push(connection);
    expect(hostPids()).toHaveLength(1);
    const status = receiptOf("host.status", await connection.request("host.status"));
    expect(status.socket).toBe("available");
    // The lock is released once the start is over.
    expect(existsSync(join(dir, START_LOCK_FILE_NAME))).toBe(false);
  });

  test("six clients at once start exactly one host; all of them reach it", async () => {
    const answers = await Promise.all(Array.from({ length: 6 }, () => runClient()));
    expect(answers).toEqual(Array(6).fill(`epoch ${FAKE_EPOCH}`));
    expect(hostPids()).toHaveLength(1);
  });

  test("a start lock left by a killed client is taken over", async () => {
    // A pid that is not running (a finished child) names the lock.
    const gone = spawn(process.execPath, ["-e", ""]);
    const pid = await new Promise<number>((resolve) => gone.on("exit", () => resolve(gone.pid!)));
    writeFileSync(join(dir, START_LOCK_FILE_NAME), `${pid}:1`);
    const connection = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("serve"),
      startTimeoutMs: 20_000,
    });
    connections.push(connection);
    expect(hostPids()).toHaveLength(1);
  });

  test("while another live process holds the start lock, nothing is started and the client says it waits", async () => {
    writeFileSync(join(dir, START_LOCK_FILE_NAME), `${process.ppid}:`);
    const notices: string[] = [];
    const error = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("serve"),
      startTimeoutMs: 1_600,
      onWait: (line) => notices.push(line),
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/did not answer within 1600 ms/);
    expect(hostPids()).toHaveLength(0);
    expect(notices[0]).toMatch(
      /^Waiting for the workflow host \(\d+ s\): another client is starting it$/,
    );
  });

  test("the host cannot start: its one line is in the error, no retry", async () => {
    const started = Date.now();
    const error = await ensureHost({ stateDir: dir, startCommand: fakeStart("fail") })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HostStartFailedError);
    expect(error.message).toMatch(
      /the host could not be started: Host start failed: the state directory is locked by another user$/,
    );
    expect(error.message).not.toContain("\n");
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  test("the host exits before its handshake", async () => {
    const error = await ensureHost({ stateDir: dir, startCommand: fakeStart("exit") })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HostStartFailedError);
    expect(error.message).toMatch(/the host exited \(exit code 3\) before it was ready/);
  });

  test("the host never answers: unavailable at the deadline and the starter is stopped", async () => {
    const started = Date.now();
    const error = await ensureHost({
      stateDir: dir,
      startCommand: fakeStart("hang"),
      startTimeoutMs: 1_500,
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/not ready within \d+ ms/);
    expect(Date.now() - started).toBeLessThan(10_000);
    // The starter is gone: found by its command line, since on a loaded machine it may have been
    // stopped before it wrote its pid file.
    expect(await waitUntil(() => starterPids("hang").length === 0, 5_000)).toBe(true);
  });

  test("a start command that cannot be executed", async () => {
    const error = await ensureHost({
      stateDir: dir,
      startCommand: { command: join(dir, "no-such-binary"), args: [] },
    }).catch((e) => e);
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(error.message).toMatch(/ENOENT/);
  });

  test("host.stop through the client never starts a host to stop it", async () => {
    const client = createHostClient({ stateDir: dir, startCommand: fakeStart("serve") });
    const started = Date.now();
    const error = await client.request("host.stop").catch((e) => e);
    client.close();
    expect(error).toBeInstanceOf(HostUnavailableError);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(hostPids()).toHaveLength(0);
  });

  test("a read through the client starts the host once and is answered", async () => {
    const client = createHostClient({ stateDir: dir, startCommand: fakeStart("serve") });
    try {
      const status = await client.call("host.status");
      expect(status.epoch).toBe(FAKE_EPOCH);
      expect(client.hostEpoch).toBe(FAKE_EPOCH);
      expect(hostPids()).toHaveLength(1);
    } finally {
      client.close();
    }
  });
});
