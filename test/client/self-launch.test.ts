import { describe, expect, test } from "vitest";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  detectRuntime,
  selfCommand,
  selfEntry,
  WORKER_BUNDLE_NAME,
  workerEntry,
} from "../../src/os/self-launch.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const cliMain = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/print-self-command.ts", import.meta.url));
const version = JSON.parse(readFileSync(`${root}package.json`, "utf8")).version as string;
const denoBin = `${root}node_modules/.bin/deno`;

function run(command: string, args: string[]): string {
  return execFileSync(command, args, {
    cwd: root,
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" },
  }).trim();
}

describe("selfCommand()", () => {
  test("from node source inside the test runner: node + the CLI main, not the runner's argv", () => {
    expect(detectRuntime()).toBe("node");
    const { command, args } = selfCommand(["--version"]);
    expect(command).toBe(process.execPath);
    expect(args.slice(-2)).toEqual([cliMain, "--version"]);
    expect(args).not.toContain(process.argv[1]);
    expect(run(command, args)).toBe(`${version} (from source)`);
  });

  test("node flags of the parent are kept, debugger and eval flags are not", () => {
    const out = JSON.parse(
      run(process.execPath, ["--stack-size=900", "--inspect-port=0", fixture, "host", "run"]),
    );
    expect(out.runtime).toBe("node");
    expect(out.command).toBe(process.execPath);
    expect(out.args).toEqual(["--stack-size=900", cliMain, "host", "run"]);
  });

  test("under deno: deno run -A <CLI main>, and the command starts the CLI", () => {
    const out = JSON.parse(run(denoBin, ["run", "-A", fixture, "--version"]));
    expect(out.runtime).toBe("deno");
    expect(out.args).toEqual(["run", "-A", cliMain, "--version"]);
    expect(run(out.command, out.args)).toBe(`${version} (from source)`);
  });

  test("inside the single executable: the executable itself, no entry", () => {
    expect(selfCommand(["worker"], { runtime: "sea" })).toEqual({
      command: process.execPath,
      args: ["worker"],
    });
  });

  test("worker modes start from the worker-only entry, which answers like the CLI", () => {
    const workerMain = cliMain.replace(/main\.ts$/, "worker-main.ts");
    const { command, args } = selfCommand(["worker", "--resolve"]);
    expect(args.slice(-3)).toEqual([workerMain, "worker", "--resolve"]);
    // Started by hand (no fd 3) it refuses with the CLI's one-line error and usage exit code.
    let failure: { status?: number; stderr?: string } = {};
    try {
      execFileSync(command, args, { cwd: root, encoding: "utf8", timeout: 30_000, stdio: "pipe" });
    } catch (error) {
      failure = error as typeof failure;
    }
    expect(failure.status).toBe(2);
    expect(failure.stderr).toMatch(/^Worker channel unavailable/);
    // A bundle's worker bundle beside it, when it exists; the bundle itself otherwise.
    const dir = mkdtempSync(join(tmpdir(), "piw-self-"));
    try {
      const bundle = join(dir, "pi-workflows.mjs");
      expect(workerEntry(bundle)).toBe(bundle);
      writeFileSync(join(dir, WORKER_BUNDLE_NAME), "");
      expect(workerEntry(bundle)).toBe(join(dir, WORKER_BUNDLE_NAME));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("selfEntry(): the bundle is its own entry", () => {
    expect(selfEntry("file:///opt/piw/dist/pi-workflows.mjs")).toBe(
      "/opt/piw/dist/pi-workflows.mjs",
    );
    expect(selfEntry()).toBe(cliMain);
  });
});
