/**
 * `npm run release`: the files a user downloads. Builds the executable of every platform the
 * release carries (targets.ts; this platform's may be given with --binary), then writes into
 * release/:
 *
 *   pi-workflows-<version>-<os>-<arch>.tar.xz   one per platform: the executable, LICENSE and a
 *                                                short README
 *   install.sh                                   the installer (`curl -fsSL <url>/install.sh | sh`)
 *   SHA256SUMS                                   `sha256sum -c` lines for all of them
 *
 * It checks the size budgets of each archive (executable and compressed) and prints them on
 * stderr, then one JSON line on stdout; a budget overrun fails the release (exit 1). An archive is
 * made the same way every time (sorted names, owner 0, the commit's time), so one commit built
 * twice gives the same archive when the executable is the same. See docs/compile.md.
 *
 *   node compile/release.ts [--binary PATH] [--out DIR] [--build-dir DIR] [--fast] [--platform NAME]...
 *
 * --build-dir is where the executables it builds go (default dist/, see build.ts): CI gives it a
 * folder of its own, so the release can run beside the smokes that use dist/.
 * --fast compresses with `xz -0` (seconds instead of a minute) for tests; its archive is larger
 * than the budget allows, so only the executable budget is checked then.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { VERSION } from "../src/base/version.ts";
import { compileTargets } from "./build.ts";
import { isHostTarget, targetByName, type TargetName, TARGETS } from "./targets.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Budgets in bytes (MB = 10^6 bytes, as the sizes are printed). */
export const BUDGETS = { executable: 120_000_000, compressed: 30_000_000 } as const;

export interface ArchiveResult {
  platform: TargetName;
  archive: string;
  executableBytes: number;
  compressedBytes: number;
  sha256: string;
  /** Budget lines as printed, e.g. `linux-x64 executable 117.7 MB (budget 120 MB): ok`. */
  report: string[];
  /** Budgets that were exceeded (empty when all fit), e.g. `darwin-x64 compressed`. */
  over: string[];
  /** The executable carries V8 code caches made by its platform's Node. */
  codeCache: boolean;
  /** The build ran the executable here (natively, or linux-arm64 under qemu). */
  ran: boolean;
  /** Seconds to build the executable (0 when given with --binary) and to archive it. */
  buildSeconds: number;
  archiveSeconds: number;
}

export interface ReleaseResult {
  version: string;
  /** The folder the files were written to (absolute). */
  outDir: string;
  archives: ArchiveResult[];
  /** Every budget exceeded, over all archives. */
  over: string[];
  seconds: number;
}

export interface ReleaseOptions {
  /** This platform's executable already built (e.g. by `npm run smoke`); default: build it. */
  binary?: string;
  /** The platforms to release (default: all of TARGETS). */
  platforms?: readonly TargetName[];
  /** Output folder (default release/); emptied first. */
  outDir?: string;
  /** Where the executables are built (default dist/). */
  buildDir?: string;
  /** `xz -0` instead of `xz -6`: for tests; the compressed budget is then not checked. */
  fast?: boolean;
}

export function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** The budget lines and the budgets exceeded; `compressed: null` means not checked. */
export function checkBudgets(
  sizes: { executable: number; compressed: number | null },
  budgets: { executable: number; compressed: number } = BUDGETS,
): { report: string[]; over: string[] } {
  const report: string[] = [];
  const over: string[] = [];
  for (const name of ["executable", "compressed"] as const) {
    const size = sizes[name];
    const limit = `budget ${megabytes(budgets[name])}`;
    if (size === null) {
      report.push(`${name} not checked (--fast archive) (${limit})`);
      continue;
    }
    const fits = size <= budgets[name];
    if (!fits) over.push(name);
    report.push(`${name} ${megabytes(size)} (${limit}): ${fits ? "ok" : "OVER BUDGET"}`);
  }
  return { report, over };
}

export async function release(options: ReleaseOptions = {}): Promise<ReleaseResult> {
  const started = performance.now();
  const outDir = resolve(options.outDir ?? join(root, "release"));
  const platforms = options.platforms ?? TARGETS.map((t) => t.name);
  const given = options.binary ? resolve(options.binary) : undefined;
  const toBuild = platforms.filter((name) => !(given && isHostTarget(targetByName(name))));
  const built = toBuild.length > 0
    ? await compileTargets(toBuild, { outDir: options.buildDir })
    : [];
  rmSync(outDir, { recursive: true, force: true });
  mkdirSync(outDir, { recursive: true });
  const archives: ArchiveResult[] = [];
  for (const platform of platforms) {
    const result = built.find((r) => r.target === platform);
    const executable = result?.path ?? given!;
    archives.push({
      ...archiveExecutable(executable, platform, outDir, options.fast ?? false),
      codeCache: result?.codeCache ?? true,
      ran: result?.ran ?? true,
      buildSeconds: result?.seconds ?? 0,
    });
  }
  copyFileSync(join(root, "install.sh"), join(outDir, "install.sh"));
  chmodSync(join(outDir, "install.sh"), 0o755);
  const sums = [...archives.map((a) => a.archive), join(outDir, "install.sh")].map((file) =>
    `${sha256(file)}  ${basename(file)}`
  );
  writeFileSync(join(outDir, "SHA256SUMS"), `${sums.join("\n")}\n`);
  return {
    version: VERSION,
    outDir,
    archives,
    over: archives.flatMap((a) => a.over),
    seconds: seconds(started),
  };
}

/** One folder `pi-workflows-<version>-<platform>/` in a reproducible .tar.xz, budgets checked. */
function archiveExecutable(
  binary: string,
  platform: TargetName,
  outDir: string,
  fast: boolean,
): Omit<ArchiveResult, "codeCache" | "ran" | "buildSeconds"> {
  const started = performance.now();
  const name = `pi-workflows-${VERSION}-${platform}`;
  const stage = join(outDir, `.stage-${platform}`);
  const dir = join(stage, name);
  mkdirSync(dir, { recursive: true });
  copyFileSync(binary, join(dir, "pi-workflows"));
  chmodSync(join(dir, "pi-workflows"), 0o755);
  copyFileSync(join(root, "LICENSE"), join(dir, "LICENSE"));
  writeFileSync(join(dir, "README.md"), releaseReadme(platform));
  const archive = join(outDir, `${name}.tar.xz`);
  const tar = join(outDir, `${name}.tar`);
  execFileSync("tar", [
    "--sort=name",
    "--owner=0",
    "--group=0",
    "--numeric-owner",
    `--mtime=@${commitTime()}`,
    "-C",
    stage,
    "-cf",
    tar,
    name,
  ]);
  rmSync(stage, { recursive: true, force: true });
  // -T0 splits the data into blocks compressed in parallel: a little larger than one block.
  execFileSync("xz", ["-T0", fast ? "-0" : "-6", "-f", tar]);
  const executableBytes = statSync(binary).size;
  const compressedBytes = statSync(archive).size;
  const { report, over } = checkBudgets({
    executable: executableBytes,
    compressed: fast ? null : compressedBytes,
  });
  return {
    platform,
    archive,
    executableBytes,
    compressedBytes,
    sha256: sha256(archive),
    report: report.map((line) => `${platform} ${line}`),
    over: over.map((budget) => `${platform} ${budget}`),
    archiveSeconds: seconds(started),
  };
}

function seconds(since: number): number {
  return Math.round((performance.now() - since) / 100) / 10;
}

function sha256(file: string): string {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** The commit's time for the archive's file times (now outside a git checkout). */
function commitTime(): number {
  const result = spawnSync("git", ["log", "-1", "--format=%ct"], { cwd: root, encoding: "utf8" });
  const seconds = Number(result.stdout?.trim());
  return result.status === 0 && Number.isInteger(seconds) ? seconds : Math.floor(Date.now() / 1000);
}

function releaseReadme(platform: TargetName): string {
  const check = platform.startsWith("darwin")
    ? "shasum -a 256 -c SHA256SUMS --ignore-missing"
    : "sha256sum -c SHA256SUMS --ignore-missing";
  return `# pi-workflows ${VERSION} (${platform})

Durable workflows for the Pi coding agent: one executable that is the CLI, the workflow host and
the worker of every run. It needs nothing else installed (no Node, no npm).

Put \`pi-workflows\` on your PATH (for example in ~/.local/bin) and run:

    pi-workflows --help
    pi-workflows start echo hello --wait      (a built-in workflow)

State lives in ~/.pi/agent/workflows (PI_WORKFLOWS_STATE_DIR moves it). Headless agent steps use
your own \`pi\` (Pi >= 1.6.0). The Pi extension comes with the npm package:
\`pi install npm:@osolmaz/pi-workflows\`.

Check a download with \`${check}\` next to the release's SHA256SUMS.

License: MIT (LICENSE).
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      binary: { type: "string" },
      out: { type: "string" },
      "build-dir": { type: "string" },
      fast: { type: "boolean" },
      platform: { type: "string", multiple: true },
    },
  });
  const result = await release({
    binary: values.binary,
    outDir: values.out,
    buildDir: values["build-dir"],
    fast: values.fast,
    platforms: values.platform?.map((name) => targetByName(name).name),
  });
  for (const archive of result.archives) {
    for (const line of archive.report) process.stderr.write(`${line}\n`);
  }
  console.log(JSON.stringify({
    version: result.version,
    outDir: result.outDir,
    seconds: result.seconds,
    over: result.over,
    archives: result.archives.map((a) => ({
      platform: a.platform,
      archive: basename(a.archive),
      executableBytes: a.executableBytes,
      compressedBytes: a.compressedBytes,
      sha256: a.sha256,
      report: a.report,
      codeCache: a.codeCache,
      ran: a.ran,
      buildSeconds: a.buildSeconds,
      archiveSeconds: a.archiveSeconds,
    })),
  }));
  if (result.over.length > 0) {
    process.stderr.write(`Release over budget: ${result.over.join(", ")}\n`);
    process.exitCode = 1;
  }
}
