/**
 * Main script of the single executable. It answers exactly `pi-workflows --version [--json]` itself, so
 * that answer costs no more than starting Node; `pi-workflows worker ...` (what the host spawns
 * for every run) runs the worker mode alone; anything else runs the whole CLI. Both are compiled
 * from an embedded asset with the V8 code cache made at build time. Keeping them out of the main
 * script is what makes the short paths short: V8 would otherwise deserialize the whole bundle's
 * cache before the first line runs.
 */
import { dirname } from "node:path";
import { getAsset } from "node:sea";
import vm from "node:vm";
import { versionJson, versionText } from "../src/base/build-info.ts";
import {
  APP_ASSET,
  CODE_CACHE_ASSET,
  CODE_CACHE_CHECK_ENV,
  WORKER_ASSET,
  WORKER_CODE_CACHE_ASSET,
} from "./sea-assets.ts";

type CommonJsMain = (
  exports: unknown,
  require: unknown,
  module: unknown,
  filename: string,
  dirname: string,
) => void;

declare const module: { exports: unknown };
declare const require: unknown;

const args = process.argv.slice(2);
if (args[0] === "--version" && args.length === 1) {
  process.stdout.write(`${versionText()}\n`);
} else if (args[0] === "--version" && args.length === 2 && args[1] === "--json") {
  process.stdout.write(`${versionJson()}\n`);
} else if (args[0] === "worker" && !args.includes("--help")) {
  run(WORKER_ASSET, WORKER_CODE_CACHE_ASSET);
} else {
  run(APP_ASSET, CODE_CACHE_ASSET);
}

function run(asset: string, cache: string): void {
  // An empty cache: the build had no Node of this platform to make one (see docs/compile.md).
  const cachedData = new Uint8Array(getAsset(cache));
  const script = new vm.Script(getAsset(asset, "utf8"), {
    filename: asset,
    cachedData: cachedData.length > 0 ? cachedData : undefined,
  });
  if (process.env[CODE_CACHE_CHECK_ENV] === "1") {
    const verdict = cachedData.length === 0
      ? "none"
      : script.cachedDataRejected
      ? "rejected"
      : "accepted";
    process.stderr.write(`code cache ${verdict}\n`);
  }
  const main = script.runInThisContext() as CommonJsMain;
  // The CLI sees the executable as its own file, as an ESM main script would.
  main(module.exports, require, module, process.execPath, dirname(process.execPath));
}
