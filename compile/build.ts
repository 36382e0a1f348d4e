/**
 * Builds the single executable: an esbuild ESM bundle of the CLI entry, then a Node single
 * executable application built by the pinned Node 26 (`node --build-sea`). Run with
 * `npm run compile`; writes `dist/pi-workflows` and prints its size and sha256.
 *
 * The SEA runs with `execArgvExtension: "none"`, so a user's NODE_OPTIONS cannot change how the
 * binary behaves, and with a V8 code cache for start-up. See docs/compile.md.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const dist = join(root, "dist");
const bundle = join(dist, "pi-workflows.mjs");
const output = join(dist, "pi-workflows");

/** Bundles the CLI into one ESM file; also the file the npm package's bin runs. */
export async function bundleCli(): Promise<string> {
  mkdirSync(dist, { recursive: true });
  await build({
    entryPoints: [join(root, "src/cli/main.ts")],
    outfile: bundle,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node22",
    // Packages bundled as CJS call require(); give the ESM bundle one.
    banner: {
      js: 'import { createRequire as __piwCreateRequire } from "node:module"; ' +
        "const require = __piwCreateRequire(import.meta.url);",
    },
    define: { "process.env.PI_WORKFLOWS_BUNDLED": '"1"' },
    plugins: [embedTextAssets()],
    logLevel: "warning",
  });
  const leftover = readFileSync(bundle, "utf8").match(TEXT_ASSET_READ);
  if (leftover) {
    throw new Error(`Bundling failed: a module still reads a file beside itself: ${leftover[0]}`);
  }
  return bundle;
}

/**
 * Source modules read text files that sit beside them (`schema.sql`) with
 * `readFileSync(new URL("./x", import.meta.url), "utf8")`. In the bundle `import.meta.url` is the
 * bundle (or the binary), where no such file exists, so the build replaces each such read with
 * the file's text as a string literal.
 */
const TEXT_ASSET_READ =
  /readFileSync\(\s*new URL\(\s*"(\.{1,2}\/[^"]+)"\s*,\s*import\.meta\.url\s*\)\s*,\s*"utf8"\s*,?\s*\)/g;

function embedTextAssets(): Plugin {
  return {
    name: "embed-text-assets",
    setup(pluginBuild) {
      pluginBuild.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, (args) => {
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta.url")) return undefined;
        const contents = source.replace(TEXT_ASSET_READ, (_match, relative: string) => {
          const asset = resolve(dirname(args.path), relative);
          return JSON.stringify(readFileSync(asset, "utf8"));
        });
        return contents === source ? undefined : { contents, loader: "ts" };
      });
    },
  };
}

/** Copies the running Node binary, stripped of symbols when `strip` is available. */
function baseExecutable(): string {
  const base = join(dist, "node-base");
  copyFileSync(process.execPath, base);
  try {
    execFileSync("strip", ["--strip-all", base], { stdio: "ignore" });
  } catch {
    // No strip on this machine: the unstripped copy works the same, it is only larger.
  }
  return base;
}

export async function compile(): Promise<{ path: string; bytes: number; sha256: string }> {
  await bundleCli();
  const config = join(dist, "sea-config.json");
  const base = baseExecutable();
  writeFileSync(
    config,
    JSON.stringify({
      main: bundle,
      mainFormat: "module",
      output,
      executable: base,
      disableExperimentalSEAWarning: true,
      useCodeCache: true,
      execArgvExtension: "none",
    }),
  );
  rmSync(output, { force: true });
  execFileSync(process.execPath, ["--build-sea", config], {
    stdio: ["ignore", "ignore", "inherit"],
  });
  rmSync(base, { force: true });
  const bytes = statSync(output).size;
  const sha256 = createHash("sha256").update(readFileSync(output)).digest("hex");
  return { path: output, bytes, sha256 };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = await compile();
  console.log(
    JSON.stringify({ binary: "dist/pi-workflows", bytes: result.bytes, sha256: result.sha256 }),
  );
}
