import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  chooseProcessBackend,
  processBackendUnsupported,
  psBackend,
  useProcessBackend,
} from "../../src/os/process-backend.ts";
import { ProcessTableUnavailable } from "../../src/os/process-table.ts";
import { createPsTableSource, readPsTableNow, runPs } from "../../src/os/ps-table.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-wf-ps-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fake `ps` that runs `body` (sh). */
function fakePs(name: string, body: string): string {
  const path = join(dir, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

const ROW = (pid: number) => `${pid} 1 ${pid} S 100 Sun Dec  6 07:09:26 2026\n`;

describe("chooseProcessBackend()", () => {
  it("picks /proc on Linux and ps elsewhere", () => {
    expect(chooseProcessBackend({}, "linux", () => true)).toBe("proc");
    expect(chooseProcessBackend({}, "linux", () => false)).toBe("ps");
    expect(chooseProcessBackend({}, "darwin", () => false)).toBe("ps");
    expect(chooseProcessBackend({}, "freebsd", () => false)).toBe("ps");
  });

  it("lets PI_WORKFLOWS_PROCESS_BACKEND force either, and refuses anything else in one line", () => {
    const env = (value: string) => ({ PI_WORKFLOWS_PROCESS_BACKEND: value });
    expect(chooseProcessBackend(env("ps"), "linux", () => true)).toBe("ps");
    expect(chooseProcessBackend(env(" proc "), "linux", () => true)).toBe("proc");
    expect(chooseProcessBackend(env(""), "darwin", () => false)).toBe("ps");
    expect(() => chooseProcessBackend(env("sysctl"), "linux", () => true)).toThrow(
      'Invalid PI_WORKFLOWS_PROCESS_BACKEND: expected proc or ps, got "sysctl"',
    );
    expect(() => chooseProcessBackend(env("proc"), "darwin", () => false)).toThrow(
      "Invalid PI_WORKFLOWS_PROCESS_BACKEND: proc needs a readable /proc; use ps",
    );
  });
});

describe("processBackendUnsupported()", () => {
  it("refuses Windows in one line naming WSL2", async () => {
    const message = await processBackendUnsupported("win32", {});
    expect(message).toBe(
      "pi-workflows does not support Windows yet: run it inside WSL2 (the Linux build works there)",
    );
  });

  it("accepts this machine under either backend and reports a bad variable", async () => {
    expect(await processBackendUnsupported("linux", { PI_WORKFLOWS_PROCESS_BACKEND: "ps" }))
      .toBeNull();
    expect(await processBackendUnsupported("linux", { PI_WORKFLOWS_PROCESS_BACKEND: "x" }))
      .toContain("Invalid PI_WORKFLOWS_PROCESS_BACKEND");
  });

  it("says what to install when ps cannot be read", async () => {
    const restore = useProcessBackend(psBackend(createPsTableSource({
      read: () => runPs({ command: join(dir, "no-such-ps") }),
    })));
    try {
      expect(await processBackendUnsupported("darwin", {})).toBe(
        "The host cannot read the process table: ps was not found (looked on PATH, /bin, " +
          "/usr/bin) (install ps, e.g. the procps package)",
      );
    } finally {
      restore();
    }
  });
});

describe("runPs()", () => {
  it("reads the real ps: this process with its parent and a start second", async () => {
    const table = await createPsTableSource().table({ fresh: true });
    const me = table.stat(process.pid)!;
    expect(me.ppid).toBe(process.ppid);
    expect(Math.abs(Number(me.startTime) - (Date.now() - performance.now()) / 1000))
      .toBeLessThan(5);
    expect(table.residentBytes(process.pid)).toBeGreaterThan(1024 * 1024);
    expect(readPsTableNow(process.pid)?.stat(process.pid)?.startTime).toBe(me.startTime);
  });

  it("gives up on a ps that hangs, within its bound, and never blocks the event loop", async () => {
    const slow = fakePs("slow-ps", "exec sleep 30");
    let ticks = 0;
    const timer = setInterval(() => ticks++, 10);
    const t0 = performance.now();
    const failure = await runPs({ command: slow, timeoutMs: 300 }).catch((error) => error);
    clearInterval(timer);
    expect(failure).toBeInstanceOf(ProcessTableUnavailable);
    expect(failure.message).toBe("ps did not answer within 300 ms");
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(ticks).toBeGreaterThan(3); // the loop ran while ps hung
    expect(readPsTableNow(1, slow)).toBeNull(); // the synchronous read is bounded too
  });

  it("reports a failing ps and output it cannot read", async () => {
    const failing = fakePs("failing-ps", "echo 'ps: illegal option' >&2; exit 1");
    await expect(runPs({ command: failing })).rejects.toThrow("ps failed: ps: illegal option");
    const source = createPsTableSource({ read: () => Promise.resolve("garbage\n") });
    await expect(source.table()).rejects.toThrow(/ps printed what this version cannot read/);
  });
});

describe("createPsTableSource()", () => {
  it("shares one read per tick and starts a fresh one only after the caller asked", async () => {
    let pid = 100;
    const releases: (() => void)[] = [];
    const source = createPsTableSource({
      read: () => {
        const text = ROW(pid++);
        return new Promise((resolve) => releases.push(() => resolve(text)));
      },
      shareMs: 60_000,
    });
    // Three shared reads and one fresh read while the first runs: one run, then one more.
    const a = source.table();
    const b = source.table();
    const fresh1 = source.table({ fresh: true });
    const fresh2 = source.table({ fresh: true });
    expect(source.runs).toBe(1);
    releases.shift()!();
    expect((await a).stat(100)).not.toBeNull();
    expect(await b).toBe(await a);
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(source.runs).toBe(2); // the queued fresh read started once the first ended
    releases.shift()!();
    const [t1, t2] = await Promise.all([fresh1, fresh2]);
    expect(t1).toBe(t2);
    expect(t1.stat(101)).not.toBeNull(); // read after they asked: not the first table
    // Within the tick a shared read reuses the newest table without running ps.
    expect(await source.table()).toBe(t1);
    expect(source.runs).toBe(2);
  });

  it("lets a shared read expire after the tick", async () => {
    let clock = 0;
    const source = createPsTableSource({
      read: () => Promise.resolve(ROW(1)),
      shareMs: 100,
      now: () => clock,
    });
    await source.table();
    clock = 50;
    await source.table();
    expect(source.runs).toBe(1);
    clock = 151;
    await source.table();
    expect(source.runs).toBe(2);
  });
});
