/**
 * Builds the single executable `dist/pi-workflows` (`npm run compile`) and the npm package's
 * bundle `dist/pi-workflows.mjs`, then prints one JSON line with the binary's size and sha256.
 * With --platform (repeatable: linux-x64, linux-arm64, darwin-arm64, darwin-x64) it builds those
 * platforms' executables from the official Node binaries of the pinned version (targets.ts);
 * darwin ones get an ad-hoc code signature (macho-sign.ts).
 *
 * The executable is a Node single executable application made by the pinned Node 26
 * (`node --build-sea`) on a stripped copy of itself. Its main script is a small launcher
 * (sea-launcher.ts); the CLI is an embedded CommonJS bundle with a V8 code cache made here. The
 * build refuses to finish unless the result prints its version and V8 accepts the code cache.
 * Both the executable and the bundle carry a build stamp (commit, time) for `--version`.
 * `execArgvExtension: "none"` keeps a user's NODE_OPTIONS from changing the binary. See
 * docs/compile.md.
 *
 *   node compile/build.ts [--no-strip] [--out DIR] [--platform NAME]...   (default DIR: dist/)
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { build, type BuildOptions } from "esbuild";
import type { BuildStamp } from "../src/base/build-info.ts";
import { WORKER_BUNDLE_NAME } from "../src/os/self-launch.ts";
import { VERSION } from "../src/base/version.ts";
import { buildStamp, stampDefine } from "./build-stamp.ts";
import { signMachO } from "./macho-sign.ts";
import { baseExecutable, writeCodeCaches } from "./target-inputs.ts";
import {
  isHostTarget,
  nodeBinary,
  runEnv,
  type Target,
  targetByName,
  type TargetName,
  TARGETS,
} from "./targets.ts";
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
  replaceFile(outfile, await esm("src/cli/main.ts"));
  replaceFile(join(dirname(outfile), WORKER_BUNDLE_NAME), await esm("src/cli/worker-main.ts"));
  // `@osolmaz/pi-workflows/testing`: a test runner imports it from node_modules, where Node will
  // not strip types, so it ships as JavaScript; its workers start from the CLI bundle beside it.
  replaceFile(join(dirname(outfile), TESTING_BUNDLE_NAME), await esm("src/testing/index.ts"));
  return outfile;
}

/**
 * Writes a bundle whole or not at all: a reader at the same moment (an `npm pack` of the
 * repository, a host starting from it) sees the old file or the new one, never a truncated one.
 */
function replaceFile(path: string, text: string): void {
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, text);
  renameSync(partial, path);
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

export interface CompileResult {
  target: TargetName;
  path: string;
  bytes: number;
  sha256: string;
  stripped: boolean;
  /** Whether the embedded bundles carry V8 code caches (made by the target's own Node). */
  codeCache: boolean;
  /** Whether the build ran the result here (this platform, or linux-arm64 under qemu). */
  ran: boolean;
  /** darwin: the ad-hoc signature's page count. */
  signedPages?: number;
  /** What `--version --json` of the executable reports about its build. */
  stamp: BuildStamp;
  seconds: number;
}

export interface CompileOptions {
  strip?: boolean;
  /**
   * Where the npm bundle, the work folder `sea/` and the executables go (default dist/): this
   * platform's as `pi-workflows`, every other as `<platform>/pi-workflows`.
   */
  outDir?: string;
}

/** Builds this platform's executable (`npm run compile`). */
export async function compile(options: CompileOptions = {}): Promise<CompileResult> {
  const host = TARGETS.find(isHostTarget);
  if (!host) throw new Error(`No executable for ${process.platform}-${process.arch}`);
  const [result] = await compileTargets([host.name], options);
  return result!;
}

/** Builds the executables of `targets` from one set of bundles, one after the other. */
export async function compileTargets(
  targets: readonly TargetName[],
  options: CompileOptions = {},
): Promise<CompileResult[]> {
  const outDir = resolve(options.outDir ?? dist);
  const work = join(outDir, "sea");
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  const stamp = buildStamp(root, "executable");
  await bundleCli(join(outDir, "pi-workflows.mjs"), { ...stamp, kind: "npm" });
  const bundles: SeaBundles = {
    launcher: join(work, "launcher.cjs"),
    app: join(work, APP_ASSET),
    workerApp: join(work, WORKER_ASSET),
  };
  writeFileSync(bundles.launcher, await bundleLauncher(stamp));
  writeFileSync(bundles.app, await bundleSeaApp("src/cli/main.ts", stamp));
  writeFileSync(bundles.workerApp, await bundleSeaApp("src/cli/worker-main.ts", stamp));
  const results: CompileResult[] = [];
  for (const name of targets) {
    const target = targetByName(name);
    const output = isHostTarget(target)
      ? join(outDir, "pi-workflows")
      : join(outDir, target.name, "pi-workflows");
    results.push(compileTarget(target, bundles, join(work, target.name), output, options, stamp));
  }
  return results;
}

interface SeaBundles {
  launcher: string;
  app: string;
  workerApp: string;
}

function compileTarget(
  target: Target,
  bundles: SeaBundles,
  work: string,
  output: string,
  options: CompileOptions,
  stamp: BuildStamp,
): CompileResult {
  const started = performance.now();
  mkdirSync(work, { recursive: true });
  mkdirSync(dirname(output), { recursive: true });
  const node = nodeBinary(target);
  const env = runEnv(target, node);
  const caches = { app: join(work, CODE_CACHE_ASSET), worker: join(work, WORKER_CODE_CACHE_ASSET) };
  writeCodeCaches(target, node, env, [
    { source: bundles.app, cache: caches.app, filename: APP_ASSET },
    { source: bundles.workerApp, cache: caches.worker, filename: WORKER_ASSET },
  ]);
  const base = baseExecutable(node, target, work, options.strip ?? true);
  const config = join(work, "sea-config.json");
  writeFileSync(
    config,
    JSON.stringify({
      main: bundles.launcher,
      output,
      executable: base.path,
      disableExperimentalSEAWarning: true,
      // Node's own cache of the main script is made by the building Node: only for its platform.
      useCodeCache: isHostTarget(target),
      execArgvExtension: "none",
      assets: {
        [APP_ASSET]: bundles.app,
        [CODE_CACHE_ASSET]: caches.app,
        [WORKER_ASSET]: bundles.workerApp,
        [WORKER_CODE_CACHE_ASSET]: caches.worker,
      },
    }),
  );
  rmSync(output, { force: true });
  execFileSync(process.execPath, ["--build-sea", config], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  rmSync(base.path, { force: true });
  let signedPages: number | undefined;
  if (target.os === "darwin") {
    // --build-sea drops Node's own signature; macOS on Apple silicon runs only signed code.
    const signed = signMachO(readFileSync(output), "pi-workflows");
    writeFileSync(output, signed.bytes, { mode: 0o755 });
    signedPages = signed.pages;
  }
  const codeCacheMade = statSync(caches.app).size > 0;
  if (env) verify(output, stamp, env, codeCacheMade);
  const bytes = statSync(output).size;
  const sha256 = createHash("sha256").update(readFileSync(output)).digest("hex");
  return {
    target: target.name,
    path: output,
    bytes,
    sha256,
    stripped: base.stripped,
    codeCache: codeCacheMade,
    ran: env !== null,
    signedPages,
    stamp,
    seconds: Math.round((performance.now() - started) / 100) / 10,
  };
}

/** The executable answers its version from the launcher and runs the CLI from the cache. */
function verify(
  binary: string,
  stamp: BuildStamp,
  runEnv: NodeJS.ProcessEnv,
  cached: boolean,
): void {
  const env = { PATH: "/usr/bin:/bin", ...runEnv, [CODE_CACHE_CHECK_ENV]: "1" };
  const expected = cached ? "code cache accepted" : "code cache none";
  // Under qemu a start takes seconds, not milliseconds.
  const timeout = 120_000;
  const version = execFileSync(binary, ["--version"], { env, encoding: "utf8", timeout }).trim();
  if (version.split(" ")[0] !== VERSION || !version.includes(`built ${stamp.date}`)) {
    throw new Error(
      `Compile check failed: --version printed ${version}, expected ${VERSION} built ${stamp.date}`,
    );
  }
  const help = spawnSync(binary, ["--help"], { env, encoding: "utf8", timeout });
  if (help.status !== 0 || !help.stdout.includes("pi-workflows")) {
    throw new Error(`Compile check failed: --help exited ${help.status}: ${help.stderr.trim()}`);
  }
  if (help.stderr.trim() !== expected) {
    throw new Error(
      `Compile check failed: expected ${expected}, the launcher said: ${help.stderr.trim()}`,
    );
  }
  // The worker mode, started by hand (no fd 3): it must run from its own cached asset and
  // refuse with its one-line usage error.
  const worker = spawnSync(binary, ["worker"], {
    env,
    encoding: "utf8",
    timeout,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const [cacheLine, errorLine] = worker.stderr.trim().split("\n");
  if (
    worker.status !== 2 || cacheLine !== expected ||
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
    options: {
      "no-strip": { type: "boolean" },
      out: { type: "string" },
      platform: { type: "string", multiple: true },
    },
  });
  const options = { strip: !values["no-strip"], outDir: values.out };
  const results = values.platform
    ? await compileTargets(values.platform.map((name) => targetByName(name).name), options)
    : [await compile(options)];
  for (const result of results) {
    console.log(JSON.stringify({
      platform: result.target,
      binary: result.path,
      bytes: result.bytes,
      sha256: result.sha256,
      stripped: result.stripped,
      codeCache: result.codeCache,
      ran: result.ran,
      commit: result.stamp.commit,
      dirty: result.stamp.dirty,
      date: result.stamp.date,
      seconds: result.seconds,
    }));
  }
}
