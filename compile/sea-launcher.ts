/**
 * Main script of the single executable. It answers exactly `pi-workflows --version` itself, so
 * that answer costs no more than starting Node; anything else runs the whole CLI, compiled from
 * an embedded asset with the V8 code cache made at build time. Keeping the CLI out of the main
 * script is what makes the short path short: V8 would otherwise deserialize the whole bundle's
 * cache before the first line runs.
 */
import { dirname } from "node:path";
import { getAsset } from "node:sea";
import vm from "node:vm";
import { VERSION } from "../src/protocol/version.ts";
import { APP_ASSET, CODE_CACHE_ASSET, CODE_CACHE_CHECK_ENV } from "./sea-assets.ts";

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
if (args.length === 1 && args[0] === "--version") {
  process.stdout.write(`${VERSION}\n`);
} else {
  runCli();
}

function runCli(): void {
  const script = new vm.Script(getAsset(APP_ASSET, "utf8"), {
    filename: APP_ASSET,
    cachedData: new Uint8Array(getAsset(CODE_CACHE_ASSET)),
  });
  if (process.env[CODE_CACHE_CHECK_ENV] === "1") {
    process.stderr.write(`code cache ${script.cachedDataRejected ? "rejected" : "accepted"}\n`);
  }
  const main = script.runInThisContext() as CommonJsMain;
  // The CLI sees the executable as its own file, as an ESM main script would.
  main(module.exports, require, module, process.execPath, dirname(process.execPath));
}
