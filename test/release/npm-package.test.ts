/**
 * The npm package as a user gets it: `npm pack` (with its prepack bundle) of a copy of this
 * checkout holds only the allowlisted files, and `npm install <tarball>` into an empty project
 * gives a working `npx pi-workflows` that runs a workflow importing `@osolmaz/pi-workflows`.
 * The install reads the registry cache first (`--prefer-offline`); only metadata missing from it
 * comes from the registry.
 */
import { execFileSync } from "node:child_process";
import {
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { VERSION } from "../../src/base/version.ts";
import { ROOT } from "../support/host.ts";
import { runProcess } from "./run-process.ts";

/** Every path the package may hold (inside the tarball's `package/`). */
const ALLOWED = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^CHANGELOG\.md$/,
  /^mod\.ts$/,
  /^testing\.ts$/,
  /^builtins\.ts$/,
  /^controllers\.ts$/,
  /^dist\/testing\.mjs$/,
  /^bin\/pi-workflows\.mjs$/,
  /^dist\/pi-workflows\.mjs$/,
  /^src\/[a-z-]+\/([a-z-]+\/)*[a-z0-9-]+\.(ts|sql|mjs)$/,
  /^schemas\/[a-z-]+\.v\d+\.json$/,
];
/** What users need: the bin and its bundle, the extension entry, the authoring API, the
 * protocol's JSON Schemas, the texts. */
const REQUIRED = [
  "package.json",
  "README.md",
  "LICENSE",
  "CHANGELOG.md",
  "mod.ts",
  "bin/pi-workflows.mjs",
  "dist/pi-workflows.mjs",
  "testing.ts",
  "controllers.ts",
  "dist/testing.mjs",
  "src/extension/index.ts",
  "src/state/schema.sql",
  "schemas/host-request.v1.json",
];

let tmp: string;
let tarball: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "pwn-"));
  env = {
    ...process.env,
    PATH: `${join(ROOT, "node_modules", ".bin")}:${process.env.PATH}`,
    npm_config_loglevel: "error",
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
  };
  // Pack a copy of the checkout (tracked and new files), so prepack's bundle lands in the copy.
  const checkout = join(tmp, "checkout");
  const files = execFileSync("git", [
    "ls-files",
    "-z",
    "--cached",
    "--others",
    "--exclude-standard",
  ], {
    cwd: ROOT,
    encoding: "utf8",
  }).split("\0").filter((f) => f !== "" && f !== "node_modules");
  for (const file of files) {
    mkdirSync(dirname(join(checkout, file)), { recursive: true });
    try {
      copyFileSync(join(ROOT, file), join(checkout, file));
    } catch (error) {
      // A file deleted in the work tree but still in the index is not part of it.
      if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
    }
  }
  symlinkSync(join(ROOT, "node_modules"), join(checkout, "node_modules"));
  const packed = await runProcess("npm", ["pack", "--json", "--pack-destination", tmp], {
    cwd: checkout,
    env,
    timeoutMs: 180_000,
  });
  expect(packed.code, packed.stderr).toBe(0);
  // prepack prints its own JSON line first; npm's report is the array after it.
  const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf("\n[") + 1))[0];
  tarball = join(tmp, report.filename);
}, 300_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("npm pack", () => {
  it("holds only the allowlisted files, and every file users need", () => {
    const listing = execFileSync("tar", ["-tzvf", tarball], { encoding: "utf8" }).trim().split(
      "\n",
    );
    const paths = listing.map((line) => line.split(/\s+/).at(-1)!.replace(/^package\//, ""));
    expect(paths.filter((p) => !ALLOWED.some((pattern) => pattern.test(p)))).toEqual([]);
    for (const path of REQUIRED) expect(paths).toContain(path);
    // Every file package.json's `exports` and `bin` name is shipped.
    const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
    const targets = (value: unknown): string[] =>
      typeof value === "string"
        ? [value.replace(/^\.\//, "")]
        : Object.values(value as Record<string, unknown>).flatMap(targets);
    expect(targets({ ...manifest.exports, ...manifest.bin }).filter((t) => !paths.includes(t)))
      .toEqual([]);
    expect(paths.filter((p) => /(^|\/)(test|tests|fixtures|compile|examples|docs)\//.test(p)))
      .toEqual([]);
    const unpacked = listing.reduce((sum, line) => sum + Number(line.split(/\s+/)[2]), 0);
    const packedBytes = Number(execFileSync("stat", ["-c", "%s", tarball], { encoding: "utf8" }));
    console.log(
      `npm package: ${paths.length} files, ${packedBytes} bytes packed, ${unpacked} unpacked`,
    );
    expect(packedBytes).toBeLessThan(2_000_000);
  });
});

describe("installed into an empty project", () => {
  it("runs a workflow with npx pi-workflows, importing @osolmaz/pi-workflows", async () => {
    const project = join(tmp, "project");
    mkdirSync(join(project, "lib"), { recursive: true });
    writeFileSync(join(project, "package.json"), '{"name": "try-pi-workflows", "private": true}\n');
    const install = await runProcess("npm", ["install", "--prefer-offline", tarball], {
      cwd: project,
      env,
      timeoutMs: 180_000,
    });
    expect(install.code, install.stderr).toBe(0);
    expect(install.stderr).toBe("");

    cpSync(join(ROOT, "examples/hello.workflow.ts"), join(project, "hello.workflow.ts"));
    cpSync(join(ROOT, "examples/lib/greet.ts"), join(project, "lib/greet.ts"));
    const runEnv = {
      ...env,
      HOME: join(tmp, "home"),
      PI_WORKFLOWS_STATE_DIR: join(tmp, "s"),
      PI_CODING_AGENT_DIR: join(tmp, "agent"),
      PI_WORKFLOWS_HOST_IDLE_MS: "120000",
    };
    try {
      const version = await runProcess("npx", ["pi-workflows", "--version", "--json"], {
        cwd: project,
        env: runEnv,
      });
      expect(JSON.parse(version.stdout)).toMatchObject({ version: VERSION, build: "npm" });
      const run = await runProcess(
        "npx",
        ["pi-workflows", "start", "hello.workflow.ts", "--input-json", '{"name":"npm"}', "--wait"],
        { cwd: project, env: runEnv },
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout).toMatch(/^✓ completed {2}run-[0-9a-f]{8} {2}hello · 3 nodes · \S+$/m);
      expect(run.stdout.trim().split("\n").at(-1)).toBe(
        '{"message":"Hello, npm!","steps":["greet","echo","finish"]}',
      );
    } finally {
      await runProcess("npx", ["pi-workflows", "host", "stop"], { cwd: project, env: runEnv });
    }
  });
});
