/**
 * `host status` with no host, on state a host would refuse to start on: it names the problem on
 * one line (without the path) and points at `doctor`, which gives the path and the fix. Before,
 * a database of another schema digest or a damaged one read "host: stopped" like a healthy one
 * (or with counts read from the damaged file), and a state "directory" that is a file made
 * doctor talk about its mode.
 */
import {
  closeSync,
  mkdirSync,
  openSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { createServer, type Socket } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it, vi } from "vitest";
import { DEFAULT_REQUEST_TIMEOUT_MS } from "../../src/client/host-connection.ts";
import { runCliInProcess } from "../support/cli-in-process.ts";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

let home: TempHome | undefined;
afterEach(() => {
  home?.cleanup();
  home = undefined;
});

/**
 * `host status` and `--json`, run in this process (the CLI's entry, runCli): a child process each
 * cost seconds on a loaded machine. The last test runs the real executable's process.
 */
async function status(env: NodeJS.ProcessEnv) {
  const text = await runCliInProcess(["host", "status"], env);
  const json = await runCliInProcess(["host", "status", "--json"], env);
  expect(text.stderr).toBe("");
  expect([text.code, json.code]).toEqual([4, 4]);
  return { text: text.stdout, json: JSON.parse(json.stdout) };
}

/** The problem line of `host status`, checked to be one line that names no path. */
function problemLine(text: string, root: string): string {
  const problems = text.split("\n").filter((l) => l.startsWith("problem: "));
  expect(problems).toHaveLength(1);
  expect(problems[0]).not.toContain(root);
  expect(problems[0]).toMatch(/'pi-workflows doctor' says how to fix it$/);
  return problems[0];
}

describe("host status on state a host cannot use", () => {
  it("a database of another schema digest", async () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-digest" }]);
    const file = join(home.stateDir, "state.sqlite");
    const db = new DatabaseSync(file);
    db.exec("UPDATE meta SET value = 'sha256:0000' WHERE key = 'ddl_digest'");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
    const before = statSync(file).mtimeMs;
    const { text, json } = await status(home.env);
    expect(problemLine(text, home.root)).toContain("its schema digest differs from this build");
    expect(json).toMatchObject({ state: "stopped", problem: expect.stringContaining("digest") });
    expect(json.runs).toBeUndefined();
    expect(statSync(file).mtimeMs).toBe(before);
    const doctor = await runCliInProcess(["doctor"], home.env);
    expect(doctor.code).toBe(5);
    expect(doctor.stdout).toContain(`mv ${file} ${file}.bak`);
  });

  it("a damaged database: no counts read from it", async () => {
    home = tempHome();
    seedRuns(
      home.stateDir,
      Array.from(
        { length: 200 },
        (_, i) => ({ runId: `run-${i}`, input: { pad: "x".repeat(2000) } }),
      ),
    );
    const file = join(home.stateDir, "state.sqlite");
    const db = new DatabaseSync(file);
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    db.close();
    const middle = Math.floor(statSync(file).size / 2 / 4096) * 4096;
    const fd = openSync(file, "r+");
    writeSync(fd, Buffer.alloc(8192, 0x5a), 0, 8192, middle);
    closeSync(fd);
    const { text, json } = await status(home.env);
    expect(problemLine(text, home.root)).toContain("the database is damaged");
    expect(problemLine(text, home.root)).toContain("`sqlite3 .recover` salvages");
    expect(json.runs).toBeUndefined();
  });

  it("a state directory that is a file", async () => {
    home = tempHome();
    rmSync(home.stateDir, { recursive: true, force: true });
    writeFileSync(home.stateDir, "not a directory\n");
    const { text } = await status(home.env);
    expect(problemLine(text, home.root)).toContain("the state directory is a file");
    const doctor = await runCliInProcess(["doctor"], home.env);
    expect(doctor.code).toBe(5);
    expect(doctor.stdout).toContain(`the state directory ${home.stateDir} is a file`);
    expect(doctor.stdout).not.toContain("Mode:");
    // Nor a config.json to fix inside a file.
    expect(doctor.stdout).not.toContain("Config:");
    // A command that starts the host on demand says the same, not mkdir's raw `EEXIST`.
    const list = await runCliInProcess(["list"], home.env);
    expect(list.code).toBe(4);
    expect(list.stderr.trim().split("\n")).toHaveLength(1);
    expect(list.stderr).toContain(`the state directory ${home.stateDir} (or a directory above it)`);
    expect(list.stderr).toContain("point PI_WORKFLOWS_STATE_DIR at a directory");
    expect(list.stderr).not.toContain("EEXIST");
  });

  it("a bad PI_WORKFLOWS_PROCESS_BACKEND is named as the setting, not as the state directory", async () => {
    home = tempHome();
    const list = await runCliProcess(
      ["list"],
      { ...home.env, PI_WORKFLOWS_PROCESS_BACKEND: "junk" },
      30_000,
    );
    // A bad setting is a usage error (exit 2, docs/cli.md), as for `host run`, not an outage.
    expect(list.code).toBe(2);
    expect(list.stderr).toBe(
      'Invalid PI_WORKFLOWS_PROCESS_BACKEND: expected proc or ps, got "junk"\n',
    );
    // So is a bad host setting the host started on demand refuses, named in one line.
    const idle = await runCliInProcess(["list"], {
      ...home.env,
      PI_WORKFLOWS_HOST_IDLE_MS: "soon",
    });
    expect(idle.code).toBe(2);
    expect(idle.stderr).toBe(
      'Invalid PI_WORKFLOWS_HOST_IDLE_MS: expected a whole number, got "soon"\n',
    );
    // And one the client reads itself before it spawns the host (host.log's rotation).
    const logBytes = await runCliInProcess(["list"], {
      ...home.env,
      PI_WORKFLOWS_HOST_LOG_BYTES: "lots",
    });
    expect(logBytes.code).toBe(2);
    expect(logBytes.stderr).toBe(
      'Invalid PI_WORKFLOWS_HOST_LOG_BYTES: expected a whole number, got "lots"\n',
    );
  });

  it("doctor names an invalid config.json, which every start and prune refuses", async () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-config" }]);
    const config = join(home.stateDir, "config.json");
    writeFileSync(config, '{"retention": {"days": "x"}, \n');
    const text = await runCliInProcess(["doctor"], home.env);
    expect(text.code).toBe(5);
    expect(text.stdout).toContain(
      "Config: Invalid config.json in the state directory: not JSON (",
    );
    expect(text.stdout).toContain(`fix ${config} or move it away`);
    writeFileSync(config, JSON.stringify({ retention: { days: "x" } }));
    const json = await runCliInProcess(["doctor", "--json"], home.env);
    expect(json.code).toBe(5);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      configProblem: expect.stringContaining("retention.days"),
    });
    // A config.json that cannot be read is not taken for none (its retention.days would be lost).
    rmSync(config);
    mkdirSync(config);
    const unreadable = await runCliInProcess(["doctor"], home.env);
    expect(unreadable.code).toBe(5);
    expect(unreadable.stdout).toContain(
      "Config: Invalid config.json in the state directory: it cannot be read (EISDIR)",
    );
    rmSync(config, { recursive: true });
    writeFileSync(config, JSON.stringify({ retention: { days: 7 } }));
    const valid = await runCliInProcess(["doctor"], home.env);
    expect(valid.code, valid.stdout).toBe(0);
    expect(valid.stdout).not.toContain("Config:");
  });

  it("an empty (0-byte) database file is a problem, not a new database", async () => {
    home = tempHome();
    const file = join(home.stateDir, "state.sqlite");
    mkdirSync(home.stateDir, { recursive: true, mode: 0o700 });
    writeFileSync(file, "", { mode: 0o600 });
    const { text, json } = await status(home.env);
    expect(problemLine(text, home.root)).toContain("the database file is empty (0 bytes)");
    expect(json.problem).toContain("empty");
    const start = await runCliProcess(["host", "start"], home.env, 60_000);
    expect(start.code).toBe(4);
    expect(start.stderr).toContain(`remove it (\`rm ${file}\`)`);
    expect(statSync(file).size).toBe(0);
  });

  it("no database yet is no problem (the CLI's own process)", async () => {
    home = tempHome();
    rmSync(join(home.stateDir, "state.sqlite"), { force: true });
    const text = await runCliProcess(["host", "status"], home.env, 30_000);
    const json = await runCliInProcess(["host", "status", "--json"], home.env);
    expect(text.stderr).toBe("");
    expect([text.code, json.code]).toEqual([4, 4]);
    expect(text.stdout).toBe("host: stopped\nsocket: unavailable\n");
    expect(JSON.parse(json.stdout).problem).toBeUndefined();
  });
});

describe("a host that accepts connections but never answers", () => {
  it("host status says so instead of 'stopped'; host stop refuses instead of 'not running'", async () => {
    home = tempHome();
    seedRuns(home.stateDir, [{ runId: "run-frozen" }]);
    // Stands in for a frozen host: the socket accepts, reads each request, answers nothing.
    const held: Socket[] = [];
    const requests = { seen: 0, all: () => {} };
    const allSeen = new Promise<void>((resolve) => (requests.all = resolve));
    const server = createServer((socket) => {
      held.push(socket);
      socket.once("data", () => ++requests.seen === 3 && requests.all());
    });
    await new Promise<void>((resolve) => server.listen(home!.socketPath, resolve));
    // A real timer (set before the fake clock) bounds the wait for the three requests.
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) =>
      timer = setTimeout(() => reject(new Error("the requests did not reach the socket")), 20_000)
    );
    // The commands run in this process (the CLI's own entry, runCli) on a fake clock: the 30 s
    // a client waits for an answer pass at once, once each request has reached the socket.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const run = (args: string[]) => runCliInProcess(args, home!.env);
      const commands = Promise.all([
        run(["host", "status"]),
        run(["host", "status", "--json"]),
        run(["host", "stop"]),
      ]);
      await Promise.race([allSeen, commands, deadline]);
      expect(requests.seen).toBe(3);
      await vi.advanceTimersByTimeAsync(DEFAULT_REQUEST_TIMEOUT_MS);
      const [text, json, stop] = await commands;
      expect([text.code, json.code, stop.code]).toEqual([4, 4, 4]);
      expect(text.stdout.split("\n").slice(0, 2)).toEqual([
        "host: not answering",
        expect.stringMatching(/^socket: not answering \(.*frozen or overloaded/),
      ]);
      expect(JSON.parse(json.stdout)).toMatchObject({
        state: "notAnswering",
        socket: "not answering",
        runs: { queued: 1 },
      });
      expect(stop.stdout).toBe("");
      expect(stop.stderr.trim().split("\n")).toHaveLength(1);
      expect(stop.stderr).toMatch(/^Host not answering: .*stop that process/);
    } finally {
      vi.useRealTimers();
      clearTimeout(timer);
      for (const socket of held) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
