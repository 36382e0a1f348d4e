/**
 * `host status` with no host, on state a host would refuse to start on: it names the problem on
 * one line (without the path) and points at `doctor`, which gives the path and the fix. Before,
 * a database of another schema digest or a damaged one read "host: stopped" like a healthy one
 * (or with counts read from the damaged file), and a state "directory" that is a file made
 * doctor talk about its mode.
 */
import { closeSync, openSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { createServer, type Socket } from "node:net";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

let home: TempHome | undefined;
afterEach(() => {
  home?.cleanup();
  home = undefined;
});

async function status(env: NodeJS.ProcessEnv) {
  const text = await runCliProcess(["host", "status"], env, 30_000);
  const json = await runCliProcess(["host", "status", "--json"], env, 30_000);
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
    const doctor = await runCliProcess(["doctor"], home.env, 30_000);
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
    expect(json.runs).toBeUndefined();
  });

  it("a state directory that is a file", async () => {
    home = tempHome();
    rmSync(home.stateDir, { recursive: true, force: true });
    writeFileSync(home.stateDir, "not a directory\n");
    const { text } = await status(home.env);
    expect(problemLine(text, home.root)).toContain("the state directory is a file");
    const doctor = await runCliProcess(["doctor"], home.env, 30_000);
    expect(doctor.code).toBe(5);
    expect(doctor.stdout).toContain(`the state directory ${home.stateDir} is a file`);
    expect(doctor.stdout).not.toContain("Mode:");
  });

  it("no database yet is no problem", async () => {
    home = tempHome();
    rmSync(join(home.stateDir, "state.sqlite"), { force: true });
    const { text, json } = await status(home.env);
    expect(text).toBe("host: stopped\nsocket: unavailable\n");
    expect(json.problem).toBeUndefined();
  });
});

describe("a host that accepts connections but never answers", () => {
  it(
    "host status says so instead of 'stopped'; host stop refuses instead of 'not running'",
    async () => {
      home = tempHome();
      seedRuns(home.stateDir, [{ runId: "run-frozen" }]);
      // Stands in for a frozen host: the socket accepts, nothing is ever answered.
      const held: Socket[] = [];
      const server = createServer((socket) => void held.push(socket));
      await new Promise<void>((resolve) => server.listen(home!.socketPath, resolve));
      try {
        const [text, json, stop] = await Promise.all([
          runCliProcess(["host", "status"], home.env, 90_000),
          runCliProcess(["host", "status", "--json"], home.env, 90_000),
          runCliProcess(["host", "stop"], home.env, 90_000),
        ]);
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
        for (const socket of held) socket.destroy();
        await new Promise((resolve) => server.close(resolve));
      }
    },
    120_000,
  );
});
