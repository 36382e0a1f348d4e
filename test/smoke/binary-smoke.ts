/**
 * Fresh-machine smoke of the compiled executable (`npm run smoke`, after `npm run compile`).
 * The binary is copied into an empty temp dir and run with only PATH=/usr/bin:/bin, a temp HOME
 * and the state/agent dirs in its environment (plus a NODE_OPTIONS that it must ignore), with
 * the temp project as its working directory: no node_modules is reachable and every host and
 * worker process must be that copied file.
 * Prints one JSON line; exits 1 on failure.
 *
 *   node test/smoke/binary-smoke.ts [--binary dist/pi-workflows]
 */
import { chmodSync, copyFileSync, existsSync, mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import {
  finish,
  makeSmokeDir,
  packageVersion,
  removeSmokeDir,
  REPO_ROOT,
  runScenario,
} from "./scenario.ts";

const { values } = parseArgs({ options: { binary: { type: "string" } } });
const source = resolve(values.binary ?? join(REPO_ROOT, "dist/pi-workflows"));
if (!existsSync(source)) {
  console.error(`Binary smoke failed: no executable at ${source}: run npm run compile first`);
  process.exit(1);
}

const dir = makeSmokeDir("binary");
const binDir = join(dir.root, "bin");
mkdirSync(binDir);
const binary = join(binDir, "pi-workflows");
copyFileSync(source, binary);
chmodSync(binary, 0o755);

try {
  const report = await runScenario({
    label: "binary",
    dir,
    command: binary,
    prefixArgs: [],
    expectedExe: binary,
    // A hostile NODE_OPTIONS that would break any Node that read it (no type stripping, a
    // missing preload): the binary is built with execArgvExtension "none" and must ignore it.
    extraEnv: { NODE_OPTIONS: "--no-strip-types --require=/nonexistent/preload.cjs" },
    expectedVersion: packageVersion(),
  });
  finish(report);
} finally {
  removeSmokeDir(dir);
}
