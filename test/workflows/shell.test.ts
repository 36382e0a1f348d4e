import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { afterAll, describe, expect, it } from "vitest";
import { runShell } from "../../src/workflows/index.ts";
import { waitUntil } from "../support/wait.ts";

const dir = mkdtempSync(join(tmpdir(), "piw-shell-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const never = () => new AbortController().signal;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie still answers kill(0): read its state.
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

describe("runShell()", () => {
  it("spawns without a shell, with args, stdin, env and cwd", async () => {
    const r = await runShell({
      command: "sh",
      args: ["-c", 'read line; printf "%s|%s|%s" "$line" "$GREETING" "$(pwd)"', "ignored-$0"],
      stdin: "from stdin\n",
      env: { GREETING: "hi" },
      cwd: dir,
    }, { signal: never() });
    expect(r).toMatchObject({
      stdout: `from stdin|hi|${dir}`,
      exitCode: 0,
      signal: null,
      cwd: dir,
    });
    const literal = await runShell({ command: "echo", args: ["$HOME", "a b"] }, {
      signal: never(),
    });
    expect(literal.stdout).toBe("$HOME a b\n");
    const viaShell = await runShell({ command: "echo $((1+2))", shell: true }, { signal: never() });
    expect(viaShell.stdout).toBe("3\n");
  });

  it("fails on a non-zero exit unless allowNonZeroExit", async () => {
    await expect(
      runShell({ command: "sh", args: ["-c", "echo oops >&2; exit 3"] }, { signal: never() }),
    )
      .rejects.toMatchObject({
        code: "commandFailed",
        message: "Command failed: sh exited with code 3: oops",
      });
    const r = await runShell({ command: "sh", args: ["-c", "exit 3"], allowNonZeroExit: true }, {
      signal: never(),
    });
    expect(r.exitCode).toBe(3);
  });

  it("reports a missing command and a malformed spec clearly", async () => {
    await expect(runShell({ command: "piw-no-such-command" }, { signal: never() })).rejects
      .toMatchObject({
        code: "commandNotFound",
        message: "Command not found: piw-no-such-command",
      });
    await expect(runShell({ command: "echo", args: [1 as never] }, { signal: never() })).rejects
      .toMatchObject({
        code: "invalidCommand",
        message: "Invalid shell command: args must be an array of strings",
      });
  });

  it("says why a command could not start: its cwd, its size, its permissions", async () => {
    const file = join(dir, "plain.txt");
    writeFileSync(file, "not a program\n", { mode: 0o644 });
    const refused = (cmd: Parameters<typeof runShell>[0]) =>
      runShell(cmd, { signal: never() }).catch((error) => ({
        code: error.code,
        message: error.message,
      }));
    // A missing cwd once read "Command not found: ls"; a file as cwd and E2BIG failed nodeFailed.
    expect(await refused({ command: "ls", cwd: join(dir, "gone") })).toEqual({
      code: "invalidCommand",
      message: `Cannot run ls: its cwd "${join(dir, "gone")}" does not exist`,
    });
    expect(await refused({ command: "ls", cwd: file })).toEqual({
      code: "invalidCommand",
      message: `Cannot run ls: its cwd "${file}" is not a directory`,
    });
    expect(await refused({ command: "echo", args: ["x".repeat(4 * 1024 * 1024)] })).toEqual({
      code: "invalidCommand",
      message: "Command could not start: echo: its arguments and environment are larger than " +
        "the system allows (E2BIG); pass large data on stdin or in a file",
    });
    expect(await refused({ command: file })).toEqual({
      code: "commandFailed",
      message: `Command could not start: ${file}: it is not executable (EACCES)`,
    });
  });

  it("caps output per stream and marks truncation", async () => {
    const r = await runShell({
      command: "sh",
      args: ["-c", "head -c 5000 /dev/zero | tr '\\0' x"],
      maxOutputChars: 100,
    }, {
      signal: never(),
    });
    expect(r.stdoutTruncated).toBe(true);
    expect(r.stdout).toBe(`${"x".repeat(100)}\n[output truncated]`);
  });

  it("splits output into lines for updates, across chunks", async () => {
    const lines: string[] = [];
    await runShell({
      command: "sh",
      args: ["-c", "printf 'a\\nb'; sleep 0.05; printf 'c\\nd'; echo e >&2"],
    }, {
      signal: never(),
      onLine: (line, stream) => lines.push(`${stream}:${line}`),
    });
    expect(lines.sort()).toEqual(["stderr:e", "stdout:a", "stdout:bc", "stdout:d"]);
  });

  it("kills the whole process group on its own timeout, escalating to SIGKILL", async () => {
    const pidFile = join(dir, "grandchild.pid");
    const started = Date.now();
    await expect(runShell({
      command: "sh",
      // The grandchild ignores SIGTERM; only SIGKILL to the group stops it.
      args: ["-c", `(trap '' TERM; sleep 30) & echo $! > ${pidFile}; wait`],
      timeoutMs: 200,
    }, { signal: never(), killGraceMs: 200 })).rejects.toMatchObject({ code: "commandTimedOut" });
    expect(Date.now() - started).toBeLessThan(5000);
    const grandchild = Number(readFileSync(pidFile, "utf8"));
    expect(await waitUntil(() => !alive(grandchild), 3000)).toBe(true);
  });

  it("ends when its direct child exits, stopping what it left in the background", async () => {
    const pidFile = join(dir, "background.pid");
    const started = Date.now();
    // The background sleep holds stdout open: waiting for the pipes to close would wait 300 s.
    const r = await runShell({
      command: `sleep 300 & echo $! > ${pidFile}; echo done`,
      shell: true,
    }, { signal: never(), killGraceMs: 500 });
    expect(r).toMatchObject({ stdout: "done\n", exitCode: 0 });
    expect(Date.now() - started).toBeLessThan(10_000);
    const background = Number(readFileSync(pidFile, "utf8"));
    expect(await waitUntil(() => !alive(background), 3000)).toBe(true);
  });

  it("a leftover that ignores SIGTERM is SIGKILLed after the grace", async () => {
    const pidFile = join(dir, "stubborn.pid");
    const r = await runShell({
      command: "sh",
      args: ["-c", `(trap '' TERM; sleep 300) & echo $! > ${pidFile}; echo started`],
    }, { signal: never(), killGraceMs: 200 });
    expect(r).toMatchObject({ stdout: "started\n", exitCode: 0 });
    const stubborn = Number(readFileSync(pidFile, "utf8"));
    expect(await waitUntil(() => !alive(stubborn), 3000)).toBe(true);
  });

  it("stops the command when the signal aborts and rethrows the abort reason", async () => {
    const controller = new AbortController();
    const reason = new DOMException("deadline", "TimeoutError");
    setTimeout(() => controller.abort(reason), 100);
    await expect(runShell({ command: "sleep", args: ["30"] }, { signal: controller.signal }))
      .rejects.toBe(reason);
  });
});

describe("runCommandBatch()", () => {
  it("runs items with bounded concurrency, keeping order and per-item outcomes", async () => {
    const { runCommandBatch } = await import("../../mod.ts");
    const settled: string[] = [];
    const result = await runCommandBatch({
      maxConcurrency: 2,
      items: [
        { id: "ok", command: "echo", args: ["hi"], cwd: dir, timeoutMs: 5000 },
        { id: "bad", command: "sh", args: ["-c", "exit 2"], cwd: dir, timeoutMs: 5000 },
        { id: "slow", command: "sleep", args: ["10"], cwd: dir, timeoutMs: 150 },
        { id: "missing", command: "piw-no-such-command", cwd: dir, timeoutMs: 5000 },
      ],
    }, { signal: never(), onItemSettled: (r) => void settled.push(r.id) });
    expect(result.schema).toBe("pi-workflows.command-batch-result.v1");
    expect(result.items.map((i) => [i.id, i.outcome])).toEqual([
      ["ok", "succeeded"],
      ["bad", "failed"],
      ["slow", "timedOut"],
      ["missing", "failed"],
    ]);
    expect(result.items[0].stdout).toBe("hi\n");
    expect(result.items[1].exitCode).toBe(2);
    expect(settled.sort()).toEqual(["bad", "missing", "ok", "slow"]);
    expect(result).toMatchObject({ completed: 4, total: 4 });
    expect(result.items[0]).toMatchObject({ command: "echo", args: ["hi"], cwd: dir });
    expect(result.items[0].error).toBeUndefined();
    expect(result.items[1].error).toBe("Exited with code 2");
  });

  it("an empty batch is an empty result; a cancelled batch starts nothing more", async () => {
    const { runCommandBatch } = await import("../../mod.ts");
    expect(await runCommandBatch({ items: [] })).toEqual({
      schema: "pi-workflows.command-batch-result.v1",
      items: [],
      completed: 0,
      total: 0,
    });
    const controller = new AbortController();
    const counts: [number, number][] = [];
    const result = await runCommandBatch({
      maxConcurrency: 1,
      items: [
        { id: "first", command: "true", cwd: dir, timeoutMs: 5000 },
        { id: "second", command: "true", cwd: dir, timeoutMs: 5000 },
      ],
    }, {
      signal: controller.signal,
      onItemSettled: (_r, completed, total) => {
        counts.push([completed, total]);
        controller.abort();
        return Promise.reject(new Error("ignored"));
      },
    });
    expect(counts).toEqual([[1, 2]]);
    expect(result.items.map((i) => i.outcome)).toEqual(["succeeded", "cancelled"]);
    expect(result.completed).toBe(1);
  });

  it("refuses malformed batches before running anything", async () => {
    const { runCommandBatch } = await import("../../mod.ts");
    const item = { id: "a", command: "true", cwd: dir, timeoutMs: 1000 };
    await expect(runCommandBatch({ items: "x" as never }, { signal: never() })).rejects.toThrow(
      "Invalid command batch: items must be an array",
    );
    await expect(runCommandBatch({ items: [item, item] }, { signal: never() })).rejects.toThrow(
      /duplicate id "a"/,
    );
    await expect(runCommandBatch({ items: [{ ...item, cwd: "rel" }] }, { signal: never() })).rejects
      .toThrow(
        /cwd must be absolute/,
      );
    await expect(runCommandBatch({ items: [item], maxConcurrency: 9 }, { signal: never() })).rejects
      .toThrow(
        /maxConcurrency must be 1-8/,
      );
  });
});
