/**
 * Builds the single executable `dist/pi-workflows` (`npm run compile`) and the npm package's
 * bundle `dist/pi-workflows.mjs`, then prints one JSON line with the binary's size and sha256.
 *
 * The executable is a Node single executable application made by the pinned Node 26
 * (`node --build-sea`) on a stripped copy of itself. Its main script is a small launcher
 * (sea-launcher.ts); the CLI is an embedded CommonJS bundle with a V8 code cache made here. The
 * build refuses to finish unless the result prints its version and V8 accepts the code cache.
 * Both the executable and the bundle carry a build stamp (commit, time) for `--version`.
 * `execArgvExtension: "none"` keeps a user's NODE_OPTIONS from changing the binary. See
 * docs/compile.md.
 *
 *   node compile/build.ts [--no-strip] [--out DIR]   (default DIR: dist/)
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import vm from "node:vm";
import { build, type BuildOptions } from "esbuild";
import type { BuildStamp } from "../src/protocol/build-info.ts";
import { WORKER_BUNDLE_NAME } from "../src/os/self-launch.ts";
import { VERSION } from "../src/protocol/version.ts";
import { buildStamp, stampDefine } from "./build-stamp.ts";
import { embedTextAssets, TEXT_ASSET_READ } from "./embed-text-assets.ts";
import { deferredBuiltins } from "./deferred-builtins.ts";
import { lazyBuiltins } from "./lazy-builtins.ts";
import {
  APP_ASSET,
  CODE_CACHE_ASSET,
  CODE_CACHE_CHECK_ENV,
  WORKER_ASSET,
  WORKER_CODE_CACHE_ASSET,
} from "./sea-assets.ts";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");

const common: BuildOptions = {
  bundle: true,
  platform: "node",
  target: "node22",
  define: { "process.env.PI_WORKFLOWS_BUNDLED": '"1"' },
  plugins: [embedTextAssets(), deferredBuiltins()],
  logLevel: "silent",
  write: false,
};

/** The test kit's bundle, beside the CLI bundle (package.json `exports["./testing"]`). */
export const TESTING_BUNDLE_NAME = "testing.mjs";

/**
 * Bundles the CLI into one ESM file: the file the npm package's bin runs. Beside it, the worker
 * mode alone (src/cli/worker-main.ts) as `pi-workflows-worker.mjs` (WORKER_BUNDLE_NAME): the
 * host starts every worker from that smaller file when it exists (src/os/self-launch.ts).
 */
export async function bundleCli(
  outfile: string = join(dist, "pi-workflows.mjs"),
  stamp: BuildStamp = buildStamp(root, "npm"),
): Promise<string> {
  mkdirSync(dirname(outfile), { recursive: true });
  const esm = (entry: string) =>
    bundleText({
      ...common,
      define: { ...common.define, ...stampDefine(stamp) },
      entryPoints: [join(root, entry)],
      format: "esm",
      plugins: [embedTextAssets(), deferredBuiltins(), lazyBuiltins()],
      // Packages bundled as CJS call require(); give the ESM bundle one.
      banner: {
        js: 'import { createRequire as __piwCreateRequire } from "node:module"; ' +
          "const require = __piwCreateRequire(import.meta.url);",
      },
    });
  writeFileSync(outfile, await esm("src/cli/main.ts"));
  writeFileSync(join(dirname(outfile), WORKER_BUNDLE_NAME), await esm("src/cli/worker-main.ts"));
  // `@osolmaz/pi-workflows/testing`: a test runner imports it from node_modules, where Node will
  // not strip types, so it ships as JavaScript; its workers start from the CLI bundle beside it.
  writeFileSync(join(dirname(outfile), TESTING_BUNDLE_NAME), await esm("src/testing/index.ts"));
  return outfile;
}

/**
 * A CLI entry as a CommonJS function body for the executable. CommonJS, because esbuild then
 * loads each module's node: built-ins inside its lazy initializer instead of hoisting them all to
 * start-up, and V8 code caches work for it. `import.meta.url` becomes the executable's URL.
 * Two entries are embedded: the whole CLI (src/cli/main.ts) and the worker mode alone
 * (src/cli/worker-main.ts), which every spawned worker runs.
 */
async function bundleSeaApp(entry: string, stamp: BuildStamp): Promise<string> {
  const text = await bundleText({
    ...common,
    entryPoints: [join(root, entry)],
    format: "cjs",
    define: { ...common.define, ...stampDefine(stamp), "import.meta.url": "__piwImportMetaUrl" },
    banner: {
      js: 'var __piwImportMetaUrl = require("node:url").pathToFileURL(__filename).href;',
    },
  });
  return `(function (exports, require, module, __filename, __dirname) {${text}\n})`;
}

async function bundleLauncher(stamp: BuildStamp): Promise<string> {
  return await bundleText({
    ...common,
    define: { ...common.define, ...stampDefine(stamp) },
    entryPoints: [join(root, "compile/sea-launcher.ts")],
    format: "cjs",
  });
}

/** Runs esbuild; any warning fails the build, so a bundle never half-works at run time. */
async function bundleText(options: BuildOptions): Promise<string> {
  const result = await build(options);
  const problems = [...result.errors, ...result.warnings].map((m) =>
    `${m.location?.file ?? "?"}:${m.location?.line ?? "?"}: ${m.text}`
  );
  if (problems.length > 0) throw new Error(`Bundling failed: ${problems.join("; ")}`);
  const text = result.outputFiles?.[0]?.text ?? "";
  const leftover = text.match(TEXT_ASSET_READ);
  if (leftover) {
    throw new Error(`Bundling failed: a module still reads a file beside itself: ${leftover[0]}`);
  }
  return text;
}

/** V8 code cache of the wrapped app, made by this Node (the one the executable is built from). */
function codeCache(app: string, filename: string): Uint8Array {
  return new vm.Script(app, { filename }).createCachedData();
}

/** A copy of the running Node binary, stripped of symbols unless asked not to or impossible. */
function baseExecutable(work: string, strip: boolean): { path: string; stripped: boolean } {
  const base = join(work, "node-base");
  copyFileSync(process.execPath, base);
  if (!strip) return { path: base, stripped: false };
  try {
    execFileSync("strip", ["--strip-all", base], { stdio: "ignore" });
    return { path: base, stripped: true };
  } catch {
    // No strip on this machine: the unstripped copy works the same, it is only larger.
    return { path: base, stripped: false };
  }
}

export interface CompileResult {
  path: string;
  bytes: number;
  sha256: string;
  stripped: boolean;
  /** What `--version --json` of the executable reports about its build. */
  stamp: BuildStamp;
}

export interface CompileOptions {
  strip?: boolean;
  /** Where `pi-workflows`, `pi-workflows.mjs` and the work folder `sea/` go (default dist/). */
  outDir?: string;
}

export async function compile(options: CompileOptions = {}): Promise<CompileResult> {
  const outDir = resolve(options.outDir ?? dist);
  const work = join(outDir, "sea");
  const output = join(outDir, "pi-workflows");
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const stamp = buildStamp(root, "executable");
  await bundleCli(join(outDir, "pi-workflows.mjs"), { ...stamp, kind: "npm" });
  const app = await bundleSeaApp("src/cli/main.ts", stamp);
  const workerApp = await bundleSeaApp("src/cli/worker-main.ts", stamp);
  const files = {
    launcher: join(work, "launcher.cjs"),
    app: join(work, APP_ASSET),
    cache: join(work, CODE_CACHE_ASSET),
    workerApp: join(work, WORKER_ASSET),
    workerCache: join(work, WORKER_CODE_CACHE_ASSET),
    config: join(work, "sea-config.json"),
  };
  writeFileSync(files.launcher, await bundleLauncher(stamp));
  writeFileSync(files.app, app);
  writeFileSync(files.cache, codeCache(app, APP_ASSET));
  writeFileSync(files.workerApp, workerApp);
  writeFileSync(files.workerCache, codeCache(workerApp, WORKER_ASSET));
  const base = baseExecutable(work, options.strip ?? true);
  writeFileSync(
    files.config,
    JSON.stringify({
      main: files.launcher,
      output,
      executable: base.path,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      execArgvExtension: "none",
      assets: {
        [APP_ASSET]: files.app,
        [CODE_CACHE_ASSET]: files.cache,
        [WORKER_ASSET]: files.workerApp,
        [WORKER_CODE_CACHE_ASSET]: files.workerCache,
      },
    }),
  );
  rmSync(output, { force: true });
  execFileSync(process.execPath, ["--build-sea", files.config], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  rmSync(base.path, { force: true });
  verify(output, stamp);
  const bytes = statSync(output).size;
  const sha256 = createHash("sha256").update(readFileSync(output)).digest("hex");
  return { path: output, bytes, sha256, stripped: base.stripped, stamp };
}

/** The executable answers its version from the launcher and runs the CLI from the cache. */
function verify(binary: string, stamp: BuildStamp): void {
  const env = { PATH: "/usr/bin:/bin", [CODE_CACHE_CHECK_ENV]: "1" };
  const version = execFileSync(binary, ["--version"], { env, encoding: "utf8" }).trim();
  if (version.split(" ")[0] !== VERSION || !version.includes(`built ${stamp.date}`)) {
    throw new Error(
      `Compile check failed: --version printed ${version}, expected ${VERSION} built ${stamp.date}`,
    );
  }
  const help = spawnSync(binary, ["--help"], { env, encoding: "utf8", timeout: 30_000 });
  if (help.status !== 0 || !help.stdout.includes("pi-workflows")) {
    throw new Error(`Compile check failed: --help exited ${help.status}: ${help.stderr.trim()}`);
  }
  if (help.stderr.trim() !== "code cache accepted") {
    throw new Error(
      `Compile check failed: V8 did not accept the code cache: ${help.stderr.trim()}`,
    );
  }
  // The worker mode, started by hand (no fd 3): it must run from its own cached asset and
  // refuse with its one-line usage error.
  const worker = spawnSync(binary, ["worker"], {
    env,
    encoding: "utf8",
    timeout: 30_000,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [cacheLine, errorLine] = worker.stderr.trim().split("\n");
  if (
    worker.status !== 2 || cacheLine !== "code cache accepted" ||
    !errorLine?.startsWith("Worker channel unavailable")
  ) {
    throw new Error(
      `Compile check failed: worker mode exited ${worker.status}: ${
        worker.stderr.trim().replaceAll("\n", " | ")
      }`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { "no-strip": { type: "boolean" }, out: { type: "string" } },
  });
  const result = await compile({ strip: !values["no-strip"], outDir: values.out });
  console.log(JSON.stringify({
    binary: result.path,
    bytes: result.bytes,
    sha256: result.sha256,
    stripped: result.stripped,
    commit: result.stamp.commit,
    dirty: result.stamp.dirty,
    date: result.stamp.date,
  }));
}
