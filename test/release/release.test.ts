/**
 * `npm run release` and install.sh, end to end: the executable is built once for this file, the
 * release folder is served from 127.0.0.1, install.sh runs under `env -i` (curl | sh) into a temp
 * prefix, and the installed executable runs a workflow with nothing else on the machine. An
 * archive with one byte changed is refused. The archive is compressed with `--fast` (xz -0, a few
 * seconds instead of a minute); the real compression and its budget are checked by CI's
 * `npm run release` (see .ci/run).
 */
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { compile, type CompileResult } from "../../compile/build.ts";
import { BUDGETS, checkBudgets, release, type ReleaseResult } from "../../compile/release.ts";
import { VERSION } from "../../src/protocol/version.ts";
import { ROOT } from "../host/helpers.ts";
import { runProcess, serveDirectory, type StaticServer } from "./run-process.ts";

const PLATFORM = `${process.platform}-${process.arch}`;
const ARCHIVE = `pi-workflows-${VERSION}-${PLATFORM}.tar.xz`;

let tmp: string;
let built: CompileResult;
let made: ReleaseResult;
let releaseDir: string;
let server: StaticServer;

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "pwr-"));
  releaseDir = join(tmp, "site", "good");
  built = await compile({ outDir: join(tmp, "build") });
  made = await release({ binary: built.path, outDir: releaseDir, fast: true });
  // The same release with one byte of the archive changed (its SHA256SUMS unchanged).
  const bad = join(tmp, "site", "bad");
  cpSync(releaseDir, bad, { recursive: true });
  const bytes = readFileSync(join(bad, ARCHIVE));
  bytes[Math.floor(bytes.length / 2)] ^= 0x01;
  writeFileSync(join(bad, ARCHIVE), bytes);
  server = await serveDirectory(join(tmp, "site"));
}, 600_000);

afterAll(async () => {
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("npm run release", () => {
  it("writes the versioned archive, install.sh and SHA256SUMS, and reports the budgets", () => {
    expect(readdirSync(releaseDir).sort()).toEqual([ARCHIVE, "SHA256SUMS", "install.sh"].sort());
    const check = execFileSync("sha256sum", ["-c", "SHA256SUMS"], {
      cwd: releaseDir,
      encoding: "utf8",
    });
    expect(check.trim().split("\n").sort()).toEqual([`${ARCHIVE}: OK`, "install.sh: OK"].sort());
    const listing = execFileSync("tar", ["-tvJf", join(releaseDir, ARCHIVE)], { encoding: "utf8" });
    const entries = listing.trim().split("\n").map((line) => line.split(/\s+/));
    const dir = `pi-workflows-${VERSION}-${PLATFORM}`;
    expect(entries.map((e) => e.at(-1))).toEqual([
      `${dir}/`,
      `${dir}/LICENSE`,
      `${dir}/README.md`,
      `${dir}/pi-workflows`,
    ]);
    expect(entries.every((e) => e[1] === "0/0")).toBe(true);
    expect(entries.at(-1)![0]).toBe("-rwxr-xr-x");
    expect(made.executableBytes).toBe(built.bytes);
    expect(made.report[0]).toMatch(/^executable \d+\.\d MB \(budget 120\.0 MB\): ok$/);
    expect(made.report[1]).toBe("compressed not checked (--fast archive) (budget 30.0 MB)");
    expect(made.over).toEqual([]);
    console.log(
      `release: executable ${made.executableBytes} bytes, --fast archive ${made.compressedBytes} bytes, ${made.seconds} s`,
    );
  });

  it("names each budget it exceeds", () => {
    const over = checkBudgets({
      executable: BUDGETS.executable + 1,
      compressed: BUDGETS.compressed,
    });
    expect(over.over).toEqual(["executable"]);
    expect(over.report).toEqual([
      "executable 120.0 MB (budget 120.0 MB): OVER BUDGET",
      "compressed 30.0 MB (budget 30.0 MB): ok",
    ]);
  });

  it("stamps the executable with the commit and the build date (--version, --version --json)", async () => {
    const env = { PATH: "/usr/bin:/bin" };
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" })
      .trim();
    const json = await runProcess(built.path, ["--version", "--json"], { env });
    expect(json.code).toBe(0);
    const info = JSON.parse(json.stdout);
    expect(info).toMatchObject({ version: VERSION, build: "executable", commit });
    expect(info.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const text = await runProcess(built.path, ["--version"], { env });
    expect(text.stdout).toBe(
      `${VERSION} (commit ${commit.slice(0, 12)}${
        info.dirty ? "+dirty" : ""
      }, built ${info.date})\n`,
    );
  });
});

describe("install.sh", () => {
  it("installs from the release site under env -i (curl | sh) and the program runs a workflow", async () => {
    const home = join(tmp, "home");
    mkdirSync(home);
    const base = `${server.url}/good`;
    const installed = await runProcess("env", [
      "-i",
      "PATH=/usr/bin:/bin",
      `HOME=${home}`,
      `PI_WORKFLOWS_BASE_URL=${base}`,
      "sh",
      "-c",
      `curl -fsSL "${base}/install.sh" | sh`,
    ]);
    expect(installed.stderr).toBe("");
    expect(installed.code).toBe(0);
    const bin = join(home, ".local", "bin");
    expect(installed.stdout.split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(
          `^Installed pi-workflows ${VERSION.replaceAll(".", "\\.")} \\(commit [0-9a-f]{12}`,
        ),
      ),
      `  to ${bin}/pi-workflows`,
      `${bin} is not on your PATH. Add it, e.g. in ~/.profile:`,
      `  export PATH="${bin}:$PATH"`,
      "",
    ]);
    expect(readdirSync(home, { recursive: true }).sort()).toEqual([
      ".local",
      ".local/bin",
      ".local/bin/pi-workflows",
    ]);

    // The installed program's main job, with nothing but the system's /usr/bin:/bin around it.
    const project = join(tmp, "project");
    mkdirSync(join(project, "lib"), { recursive: true });
    cpSync(join(ROOT, "examples/hello.workflow.ts"), join(project, "hello.workflow.ts"));
    cpSync(join(ROOT, "examples/lib/greet.ts"), join(project, "lib/greet.ts"));
    const env = [
      "-i",
      "PATH=/usr/bin:/bin",
      `HOME=${home}`,
      `PI_WORKFLOWS_STATE_DIR=${join(tmp, "s")}`,
      `PI_CODING_AGENT_DIR=${join(home, "agent")}`,
      "PI_WORKFLOWS_HOST_IDLE_MS=120000",
    ];
    const program = join(bin, "pi-workflows");
    try {
      const run = await runProcess(
        "env",
        [
          ...env,
          program,
          "start",
          "hello.workflow.ts",
          "--input-json",
          '{"name":"Release"}',
          "--wait",
        ],
        { cwd: project },
      );
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout.trim().split("\n").at(-1)).toBe(
        '{"message":"Hello, Release!","steps":["greet","echo","finish"]}',
      );
    } finally {
      await runProcess("env", [...env, program, "host", "stop"], { cwd: project });
    }
  });

  it("refuses an archive with one byte changed, in one line, and installs nothing", async () => {
    const prefix = join(tmp, "prefix");
    const installed = await runProcess("env", [
      "-i",
      "PATH=/usr/bin:/bin",
      `PREFIX=${prefix}`,
      `PI_WORKFLOWS_BASE_URL=${server.url}/bad`,
      "sh",
      join(releaseDir, "install.sh"),
    ]);
    expect(installed.code).toBe(1);
    expect(installed.stdout).toBe("");
    expect(installed.stderr).toMatch(
      new RegExp(
        `^pi-workflows install: checksum mismatch for ${
          ARCHIVE.replaceAll(".", "\\.")
        } \\(expected [0-9a-f]{64}, got [0-9a-f]{64}\\): the download is damaged or was altered; nothing was installed\\n$`,
      ),
    );
    expect(existsSync(prefix)).toBe(false);
  });
});
