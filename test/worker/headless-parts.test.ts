/**
 * The pieces a headless worker uses around its Pi child: the bounded output tail on disk, the
 * bridge file written into the user-only state directory, and stopping a child's whole tree,
 * descendants in process groups of their own included (a Pi's bash tool detaches its commands),
 * the run's session files and what the child's command line loads, and Pi's first error line.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  descendantsOf,
  readProcessIdentityNow,
  readProcessStatNow,
  signalGroup,
} from "../../src/os/process-identity.ts";
import { stopProcessTree, waitUntil } from "../../src/os/stop-group.ts";
import { createOutputTail } from "../../src/worker/output-tail.ts";
import { bridgeSource, ensureBridgeFile } from "../../src/worker/pi-bridge-file.ts";
import { headlessPiArgs, NO_AMBIENT_FLAGS } from "../../src/worker/headless-pi-args.ts";
import { memberSessionArgs, runSessionArgs } from "../../src/worker/headless-session.ts";
import { firstErrorLine } from "../../src/worker/pi-child.ts";

const dirs: string[] = [];
const leftovers: number[] = [];
afterEach(() => {
  for (const pid of leftovers.splice(0)) {
    const identity = readProcessIdentityNow(pid);
    if (identity) void signalGroup(identity, "SIGKILL");
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "piw-headless-"));
  dirs.push(dir);
  return dir;
}

describe("output tail", () => {
  it("keeps at most the budget, always the latest half, in 0600 files", () => {
    const dir = join(tempDir(), "workers");
    const tail = createOutputTail(dir, "epoch-pi1", ".out", 100);
    for (let i = 0; i < 40; i++) tail.write(Buffer.from(`line ${String(i).padStart(2, "0")}\n`));
    tail.close();
    const files = readdirSync(dir).sort();
    expect(files).toEqual(["epoch-pi1.1.out", "epoch-pi1.out"]);
    const kept = files.map((f) => readFileSync(join(dir, f), "utf8"));
    expect(kept.join("").length).toBeLessThanOrEqual(100);
    expect(readFileSync(join(dir, "epoch-pi1.out"), "utf8")).toContain("line 39\n");
    for (const f of files) expect(statSync(join(dir, f)).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it("keeps only the end of one oversized chunk and leaves no file for no output", () => {
    const dir = join(tempDir(), "workers");
    const big = createOutputTail(dir, "big", ".err", 10);
    big.write(Buffer.from("0123456789abcdef"));
    big.close();
    expect(readFileSync(join(dir, "big.err"), "utf8")).toBe("bcdef");
    const none = createOutputTail(dir, "none", ".out", 10);
    none.close();
    expect(readdirSync(dir)).toEqual(["big.err"]);
  });
});

describe("bridge file", () => {
  it("is written once, by content hash, 0600 in a 0700 directory", () => {
    const stateDir = tempDir();
    const file = ensureBridgeFile(stateDir);
    expect(file).toMatch(/\/pi\/bridge-[0-9a-f]{16}\.mjs$/);
    expect(readFileSync(file, "utf8")).toBe(bridgeSource());
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(stateDir, "pi")).mode & 0o777).toBe(0o700);
    const mtime = statSync(file).mtimeMs;
    expect(ensureBridgeFile(stateDir)).toBe(file);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(bridgeSource()).toContain('const SCHEMA = "pi-workflows.pi-bridge.v1"');
  });
});

describe("stopProcessTree()", () => {
  it("stops a leader that ignores SIGTERM and a descendant that left its group", async () => {
    // The leader ignores SIGTERM; its child starts a grandchild in a group of its own that
    // ignores SIGTERM too (an ignored signal stays ignored across exec).
    const grandchild = `['-c', 'trap \\'\\' TERM; exec sleep 300']`;
    const script = "trap '' TERM; " +
      `node -e "require('child_process').spawn('sh', ${grandchild}, {detached: true, stdio: 'ignore'}).unref(); setInterval(() => {}, 1000)" & ` +
      "wait";
    const leader = spawn("sh", ["-c", script], { detached: true, stdio: "ignore" });
    leftovers.push(leader.pid!);
    const identity = readProcessIdentityNow(leader.pid!)!;
    let sleeper = 0;
    expect(
      await waitUntil(async () => {
        const found = (await descendantsOf(leader.pid!)).find((d) => {
          const stat = readProcessStatNow(d.pid);
          return stat?.pgrp === d.pid &&
            readFileSync(`/proc/${d.pid}/cmdline`, "utf8").startsWith("sleep");
        });
        sleeper = found?.pid ?? 0;
        return sleeper !== 0;
      }, 10_000),
    ).toBe(true);
    leftovers.push(sleeper);
    expect(readProcessStatNow(sleeper)!.pgrp).not.toBe(leader.pid);
    expect(await stopProcessTree(identity, { graceMs: 300 })).toBe("killed");
    expect(readProcessIdentityNow(leader.pid!)).toBe(null);
    expect(readProcessIdentityNow(sleeper)).toBe(null);
    expect(await stopProcessTree(identity, { graceMs: 300 })).toBe("alreadyGone");
  });
});

describe("the run's session and the child's command line", () => {
  it("creates the run's session file 0600 in 0700 directories, and keeps what it holds", () => {
    const file = join(tempDir(), "sessions", "run-1", "run.jsonl");
    expect(runSessionArgs(file)).toEqual(["--session", file]);
    expect(statSync(file).size).toBe(0);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(file, "..")).mode & 0o777).toBe(0o700);
    writeFileSync(file, '{"type":"session"}\n');
    runSessionArgs(file);
    expect(readFileSync(file, "utf8")).toBe('{"type":"session"}\n');
  });

  it("starts a member fresh, forks it from a run session that has content, continues its own", () => {
    const root = join(tempDir(), "sessions", "run-1");
    const runFile = join(root, "run.jsonl");
    const key = { nodeId: "review/group", visit: 2, memberId: "a" };
    runSessionArgs(runFile);
    const fresh = memberSessionArgs(runFile, root, key);
    expect(fresh.origin).toBe("fresh");
    expect(fresh.dir).toBe(join(root, "members", "review_group.v2.a"));
    expect(fresh.args).toEqual(["--session", join(fresh.dir, "member.jsonl")]);
    rmSync(join(fresh.dir, "member.jsonl"));
    writeFileSync(runFile, '{"type":"session"}\n');
    const forked = memberSessionArgs(runFile, root, key);
    expect(forked).toMatchObject({ origin: "forked" });
    expect(forked.args).toEqual(["--fork", runFile, "--session-dir", forked.dir]);
    writeFileSync(join(forked.dir, "2026_x.jsonl"), '{"type":"session"}\n');
    expect(memberSessionArgs(runFile, root, key).args).toEqual([
      "--session",
      join(forked.dir, "2026_x.jsonl"),
    ]);
  });

  it("loads nothing ambient by default; context files and skills with the project context", () => {
    const base = { session: ["--session", "/s.jsonl"], bridgeFile: "/b.mjs", recorded: ["-x"] };
    const plain = headlessPiArgs({ ...base, context: "none" });
    expect(plain).toEqual([
      "--mode",
      "rpc",
      "--session",
      "/s.jsonl",
      ...NO_AMBIENT_FLAGS,
      "-e",
      "/b.mjs",
      "-x",
    ]);
    for (const flag of ["--no-context-files", "--no-skills", "--no-mcp", "--no-extensions"]) {
      expect(plain).toContain(flag);
    }
    const project = headlessPiArgs({ ...base, context: "project", tools: ["read"] });
    expect(project).not.toContain("--no-context-files");
    expect(project).not.toContain("--no-skills");
    expect(project).toContain("--no-extensions");
    expect(project.slice(-2)).toEqual(["--tools", "read,workflow"]);
  });

  it("names Pi's first error line, not a later error or a version banner", () => {
    expect(firstErrorLine("Warning: x\nError: first\nError: second\npi 1.6.0\n")).toBe(
      "Error: first",
    );
    expect(firstErrorLine("  \nsomething broke: TypeError here\npi 1.6.0")).toBe(
      "something broke: TypeError here",
    );
    expect(firstErrorLine("pi 1.6.0\n")).toBe("pi 1.6.0");
    expect(firstErrorLine("")).toBe("");
  });
});
