/**
 * `npm run release`: the files a user downloads. Builds the single executable (or packages the
 * one given with --binary), then writes into release/:
 *
 *   pi-workflows-<version>-<os>-<arch>.tar.xz   the executable, LICENSE and a short README
 *   install.sh                                   the installer (`curl -fsSL <url>/install.sh | sh`)
 *   SHA256SUMS                                   `sha256sum -c` lines for both
 *
 * It checks the size budgets (executable and compressed archive) and prints both on stderr, then
 * one JSON line on stdout; a budget overrun fails the release (exit 1). The archive is made the
 * same way every time (sorted names, owner 0, the commit's time), so one commit built twice gives
 * the same archive when the executable is the same. See docs/compile.md.
 *
 *   node compile/release.ts [--binary PATH] [--out DIR] [--fast]
 *
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
import { VERSION } from "../src/protocol/version.ts";
import { compile } from "./build.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");

/** Budgets in bytes (MB = 10^6 bytes, as the sizes are printed). */
export const BUDGETS = { executable: 120_000_000, compressed: 30_000_000 } as const;

export interface ReleaseResult {
  version: string;
  platform: string;
  archive: string;
  executableBytes: number;
  compressedBytes: number;
  sha256: string;
  /** Budget lines as printed, e.g. `executable 117.7 MB (budget 120 MB): ok`. */
  report: string[];
  /** Budgets that were exceeded (empty when all fit). */
  over: string[];
  seconds: number;
}

export interface ReleaseOptions {
  /** An executable already built (e.g. by `npm run smoke`); default: compile one now. */
  binary?: string;
  /** Output folder (default release/); emptied first. */
  outDir?: string;
  /** `xz -0` instead of `xz -6`: for tests; the compressed budget is then not checked. */
  fast?: boolean;
}

/** The platform name in artifact names: linux-x64, linux-arm64, darwin-arm64, ... */
export function platformName(platform = process.platform, arch = process.arch): string {
  return `${platform}-${arch}`;
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
  const binary = options.binary ? resolve(options.binary) : (await compile()).path;
  const platform = platformName();
  const name = `pi-workflows-${VERSION}-${platform}`;
  rmSync(outDir, { recursive: true, force: true });
  const stage = join(outDir, ".stage");
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
  execFileSync("xz", ["-T0", options.fast ? "-0" : "-6", "-f", tar]);
  copyFileSync(join(root, "install.sh"), join(outDir, "install.sh"));
  chmodSync(join(outDir, "install.sh"), 0o755);
  const sums = [archive, join(outDir, "install.sh")].map((file) =>
    `${sha256(file)}  ${basename(file)}`
  );
  writeFileSync(join(outDir, "SHA256SUMS"), `${sums.join("\n")}\n`);
  const executableBytes = statSync(binary).size;
  const compressedBytes = statSync(archive).size;
  const { report, over } = checkBudgets({
    executable: executableBytes,
    compressed: options.fast ? null : compressedBytes,
  });
  return {
    version: VERSION,
    platform,
    archive,
    executableBytes,
    compressedBytes,
    sha256: sha256(archive),
    report,
    over,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
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

function releaseReadme(platform: string): string {
  return `# pi-workflows ${VERSION} (${platform})

Durable workflows for the Pi coding agent: one executable that is the CLI, the workflow host and
the worker of every run. It needs nothing else installed (no Node, no npm).

Put \`pi-workflows\` on your PATH (for example in ~/.local/bin) and run:

    pi-workflows --help
    pi-workflows start echo hello --wait      (a built-in workflow)

State lives in ~/.pi/agent/workflows (PI_WORKFLOWS_STATE_DIR moves it). Headless agent steps use
your own \`pi\` (Pi >= 1.6.0). The Pi extension comes with the npm package:
\`pi install npm:@osolmaz/pi-workflows\`.

Check a download with \`sha256sum -c SHA256SUMS --ignore-missing\` next to the release's SHA256SUMS.

License: MIT (LICENSE).
`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { binary: { type: "string" }, out: { type: "string" }, fast: { type: "boolean" } },
  });
  const result = await release({ binary: values.binary, outDir: values.out, fast: values.fast });
  for (const line of result.report) process.stderr.write(`${line}\n`);
  console.log(JSON.stringify({
    archive: result.archive,
    compressedBytes: result.compressedBytes,
    executableBytes: result.executableBytes,
    over: result.over,
    platform: result.platform,
    seconds: result.seconds,
    sha256: result.sha256,
    version: result.version,
  }));
  if (result.over.length > 0) {
    process.stderr.write(`Release over budget: ${result.over.join(", ")}\n`);
    process.exitCode = 1;
  }
}
