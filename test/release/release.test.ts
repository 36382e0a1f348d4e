/**
 * `npm run release` and install.sh, end to end: the four platforms' executables are built once
 * for this file (this platform's from the running Node, the others from the pinned Node's
 * packages on the npm registry), each is checked structurally by a parser of its own
 * (binary-format.ts: format, architecture, and for darwin the ad-hoc signature's page hashes),
 * the release folder is served from 127.0.0.1, install.sh runs under `env -i` (curl | sh) into a
 * temp prefix, and the installed executable runs a workflow with nothing else on the machine. An
 * archive with one byte changed is refused. When qemu-user is registered with the kernel
 * (binfmt_misc), install.sh told by a faked `uname` that it runs on aarch64 installs the
 * linux-arm64 build, which then runs the same workflow (host and worker) under emulation.
 * Archives are compressed with `--fast` (xz -0). CI builds the real release first (`npm run
 * release`, xz -6, after the smoke compiled this platform's executable) and names the JSON line it
 * printed in PI_WORKFLOWS_RELEASE_JSON: this file then checks those files, compressed budget
 * included, instead of building the four executables a second time (see .ci/run).
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
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
import { BUDGETS, checkBudgets, release, type ReleaseResult } from "../../compile/release.ts";
import { nodeBinary, targetByName, TARGETS } from "../../compile/targets.ts";
import { VERSION } from "../../src/base/version.ts";
import { ROOT } from "../support/host.ts";
import { inspectBinary } from "./binary-format.ts";
import {
  type ProcessResult,
  runProcess,
  serveDirectory,
  type StaticServer,
} from "./run-process.ts";

const PLATFORM = `${process.platform}-${process.arch}`;
const archiveName = (platform: string) => `pi-workflows-${VERSION}-${platform}.tar.xz`;
const ARCHIVE = archiveName(PLATFORM);

/** The release CI built already: the JSON line `npm run release` printed, or none. */
const BUILT = process.env.PI_WORKFLOWS_RELEASE_JSON?.trim() || null;

let tmp: string;
let made: ReleaseResult;
let releaseDir: string;
let server: StaticServer;

/** The release `npm run release` made (its JSON line in `file`), copied to `releaseDir`. */
function builtRelease(file: string): ReleaseResult {
  const line: ReleaseResult = JSON.parse(readFileSync(file, "utf8").trim().split("\n").at(-1)!);
  expect(line.version, `${file} is another version's release`).toBe(VERSION);
  cpSync(line.outDir, releaseDir, { recursive: true });
  const archives = line.archives.map((a) => ({ ...a, archive: join(releaseDir, a.archive) }));
  return { ...line, outDir: releaseDir, archives };
}

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), "pwr-"));
  releaseDir = join(tmp, "site", "good");
  made = BUILT
    ? builtRelease(BUILT)
    : await release({ outDir: releaseDir, buildDir: join(tmp, "build"), fast: true });
  // The same release with one byte of the archive changed (its SHA256SUMS unchanged): what
  // install.sh fetches for this platform, not the other platforms' archives.
  const bad = join(tmp, "site", "bad");
  mkdirSync(bad);
  for (const name of [ARCHIVE, "SHA256SUMS"]) cpSync(join(releaseDir, name), join(bad, name));
  const bytes = readFileSync(join(bad, ARCHIVE));
  bytes[Math.floor(bytes.length / 2)] ^= 0x01;
  writeFileSync(join(bad, ARCHIVE), bytes);
  server = await serveDirectory(join(tmp, "site"));
}, 1_200_000);

afterAll(async () => {
  await server?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

/** Each platform's archive, unpacked once: its folder and tar's long listing of what it held. */
const unpackedArchives = new Map<string, { dir: string; listing: string }>();

/** Unpacks the archive of `platform` (once: xz takes seconds per archive), listing as it goes. */
function unpack(platform: string): { dir: string; listing: string } {
  let done = unpackedArchives.get(platform);
  if (!done) {
    const dir = join(tmp, "unpacked", platform);
    mkdirSync(dir, { recursive: true });
    // -xvv lists each entry as -tv does (mode, owner, size, date, name) while it extracts.
    const archive = join(releaseDir, archiveName(platform));
    const listing = execFileSync("tar", ["-xvvJf", archive, "-C", dir], { encoding: "utf8" });
    done = { dir, listing };
    unpackedArchives.set(platform, done);
  }
  return done;
}

/** The executable of `platform` as the archive holds it. */
function unpacked(platform: string): string {
  return join(unpack(platform).dir, `pi-workflows-${VERSION}-${platform}`, "pi-workflows");
}

describe("npm run release", () => {
  it("writes an archive per platform, install.sh and SHA256SUMS, and reports the budgets", () => {
    const names = TARGETS.map((t) => archiveName(t.name));
    expect(readdirSync(releaseDir).sort()).toEqual([...names, "SHA256SUMS", "install.sh"].sort());
    const check = execFileSync("sha256sum", ["-c", "SHA256SUMS"], {
      cwd: releaseDir,
      encoding: "utf8",
    });
    expect(check.trim().split("\n").sort()).toEqual(
      [...names.map((n) => `${n}: OK`), "install.sh: OK"].sort(),
    );
    for (const archive of made.archives) {
      const listing = unpack(archive.platform).listing;
      const entries = listing.trim().split("\n").map((line) => line.split(/\s+/));
      const dir = `pi-workflows-${VERSION}-${archive.platform}`;
      expect(entries.map((e) => e.at(-1))).toEqual([
        `${dir}/`,
        `${dir}/LICENSE`,
        `${dir}/README.md`,
        `${dir}/pi-workflows`,
      ]);
      expect(entries.every((e) => e[1] === "0/0")).toBe(true);
      expect(entries.at(-1)![0]).toBe("-rwxr-xr-x");
      const size = (name: string, budget: string) =>
        expect.stringMatching(
          new RegExp(`^${archive.platform} ${name} \\d+\\.\\d MB \\(budget ${budget} MB\\): ok$`),
        );
      expect(archive.report).toEqual([
        size("executable", "120\\.0"),
        BUILT
          ? size("compressed", "30\\.0")
          : `${archive.platform} compressed not checked (--fast archive) (budget 30.0 MB)`,
      ]);
      console.log(
        `release ${archive.platform}: executable ${archive.executableBytes} bytes, ${
          BUILT ? "" : "--fast "
        }archive ${archive.compressedBytes} bytes, build ${archive.buildSeconds} s, archive ${archive.archiveSeconds} s, code cache ${archive.codeCache}, ran ${archive.ran}`,
      );
    }
    expect(made.over).toEqual([]);
  }, 300_000);

  it(
    "each executable is its platform's format and architecture, carries the application, and darwin's are signed ad hoc",
    () => {
      for (const target of TARGETS) {
        const report = inspectBinary(unpacked(target.name));
        expect(report, target.name).toMatchObject({
          format: target.os === "darwin" ? "macho" : "elf",
          arch: target.arch,
          problems: [],
          seaInjected: true,
        });
        if (target.os === "darwin") {
          expect(report.signature).toMatchObject({ identifier: "pi-workflows", flags: 0x2 });
        }
      }
    },
    300_000,
  );

  it("the signature check finds a changed page and reads Apple's own signatures", () => {
    const signed = unpacked("darwin-arm64");
    const copy = join(tmp, "tampered");
    const bytes = readFileSync(signed);
    bytes[bytes.length >> 1] ^= 0x01;
    writeFileSync(copy, bytes);
    expect(inspectBinary(copy).problems).toEqual([
      expect.stringMatching(/^1 of \d+ page hashes do not match the file$/),
    ]);
    // The official Node for macOS, signed by Apple's codesign with Node's Developer ID: the same
    // parser accepts every page hash of it (it is not ad hoc, so that is the one problem).
    const official = inspectBinary(nodeBinary(targetByName("darwin-arm64")));
    expect(official.problems).toEqual(["CodeDirectory is not ad hoc"]);
    expect(official.signature?.identifier).toBe("node");
  }, 300_000);

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
    const binary = unpacked(PLATFORM);
    const commit = execFileSync("git", ["rev-parse", "HEAD"], { cwd: ROOT, encoding: "utf8" })
      .trim();
    const json = await runProcess(binary, ["--version", "--json"], { env });
    expect(json.code).toBe(0);
    const info = JSON.parse(json.stdout);
    expect(info).toMatchObject({ version: VERSION, build: "executable", commit });
    expect(info.date).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    const text = await runProcess(binary, ["--version"], { env });
    expect(text.stdout).toBe(
      `${VERSION} (commit ${commit.slice(0, 12)}${
        info.dirty ? "+dirty" : ""
      }, built ${info.date})\n`,
    );
  });
});

/**
 * The environment that runs aarch64 Linux programs here (qemu-user registered with binfmt_misc,
 * Debian's arm64 cross libraries for its loader), or null when there is none.
 */
function qemuArm64(): Record<string, string> | null {
  if (process.platform !== "linux" || process.arch === "arm64") return null;
  const libs = process.env.QEMU_LD_PREFIX ?? "/usr/aarch64-linux-gnu";
  const registered = existsSync("/proc/sys/fs/binfmt_misc/qemu-aarch64");
  return registered && existsSync(libs) ? { QEMU_LD_PREFIX: libs } : null;
}
const QEMU = qemuArm64();

/** Runs `curl <base>/install.sh | sh` under env -i into `home`, with `fake` first on PATH. */
async function curlInstall(base: string, home: string, extra: string[] = [], fake = "") {
  return await runProcess("env", [
    "-i",
    `PATH=${fake ? `${fake}:` : ""}/usr/bin:/bin`,
    `HOME=${home}`,
    `PI_WORKFLOWS_BASE_URL=${base}`,
    ...extra,
    "sh",
    "-c",
    `curl -fsSL "${base}/install.sh" | sh`,
  ]);
}

/**
 * The installed program's main job, with nothing but the system's /usr/bin:/bin around it:
 * `start hello.workflow.ts --wait` (host, resolver and worker are the program), then host stop.
 */
async function runHello(
  program: string,
  home: string,
  name: string,
  extra: string[] = [],
  startArgs: string[] = [],
) {
  const project = join(tmp, `project-${name}`);
  mkdirSync(join(project, "lib"), { recursive: true });
  cpSync(join(ROOT, "examples/hello.workflow.ts"), join(project, "hello.workflow.ts"));
  cpSync(join(ROOT, "examples/lib/greet.ts"), join(project, "lib/greet.ts"));
  const env = [
    "-i",
    "PATH=/usr/bin:/bin",
    `HOME=${home}`,
    `PI_WORKFLOWS_STATE_DIR=${join(tmp, `s-${name}`)}`,
    `PI_CODING_AGENT_DIR=${join(home, "agent")}`,
    "PI_WORKFLOWS_HOST_IDLE_MS=120000",
    ...extra,
  ];
  let run: ProcessResult;
  try {
    run = await runProcess(
      "env",
      [
        ...env,
        program,
        "start",
        "hello.workflow.ts",
        ...startArgs,
        "--input-json",
        `{"name":"${name}"}`,
        "--wait",
      ],
      { cwd: project, timeoutMs: 300_000 },
    );
  } finally {
    await runProcess("env", [...env, program, "host", "stop"], {
      cwd: project,
      timeoutMs: 120_000,
    });
  }
  return run;
}

describe("install.sh", () => {
  it("installs from the release site under env -i (curl | sh) and the program runs a workflow", async () => {
    const home = join(tmp, "home");
    mkdirSync(home);
    const installed = await curlInstall(`${server.url}/good`, home);
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
    const run = await runHello(join(bin, "pi-workflows"), home, "Release");
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout.trim().split("\n").at(-1)).toBe(
      '{"message":"Hello, Release!","steps":["greet","echo","finish"]}',
    );
  });

  it.skipIf(!QEMU)(
    `on aarch64 (uname faked, the program run by qemu-user) installs linux-arm64 and runs a workflow${
      QEMU
        ? ""
        : " (skipped: no qemu-user registered for aarch64 programs here; .ci/qemu-arm64.sh sets it up)"
    }`,
    async () => {
      const arm64 = made.archives.find((a) => a.platform === "linux-arm64")!;
      expect(arm64).toMatchObject({ ran: true, codeCache: true });
      const home = join(tmp, "home-arm64");
      mkdirSync(home);
      const fake = join(tmp, "fake-aarch64");
      mkdirSync(fake);
      writeFileSync(
        join(fake, "uname"),
        '#!/bin/sh\ncase "$1" in -s) echo Linux ;; -m) echo aarch64 ;; *) exit 2 ;; esac\n',
      );
      chmodSync(join(fake, "uname"), 0o755);
      // Emulation is about ten times slower than the machine: give workers and the resolver
      // more than the default 15 s to start and load the workflow file.
      const qemuEnv = [
        ...Object.entries(QEMU!).map(([k, v]) => `${k}=${v}`),
        "PI_WORKFLOWS_WORKER_STARTUP_MS=120000",
      ];
      const installed = await curlInstall(`${server.url}/good`, home, qemuEnv, fake);
      expect(installed.stderr).toBe("");
      expect(installed.code).toBe(0);
      const program = join(home, ".local", "bin", "pi-workflows");
      expect(inspectBinary(program)).toMatchObject({ format: "elf", arch: "arm64" });
      const help = await runProcess(program, ["--help"], {
        env: { PATH: "/usr/bin:/bin", ...QEMU },
        timeoutMs: 120_000,
      });
      expect(help.code).toBe(0);
      expect(help.stdout).toContain("pi-workflows");
      // A run's worker gets the run's environment only: qemu's loader prefix travels with --env.
      const run = await runHello(program, home, "Arm", qemuEnv, ["--env", "QEMU_LD_PREFIX"]);
      expect(run.stderr).toBe("");
      expect(run.code).toBe(0);
      expect(run.stdout.trim().split("\n").at(-1)).toBe(
        '{"message":"Hello, Arm!","steps":["greet","echo","finish"]}',
      );
    },
    600_000,
  );

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
