/**
 * Deno smoke: `deno run -A src/cli/main.ts` (the `deno` npm package) starts a host that spawns
 * Deno workers, and runs the shared smoke scenario (see scenario.ts) from the source tree.
 * DENO_DIR lives in `.cache/deno-dir`. Prints one JSON line; exits 1 on failure.
 *
 *   node test/smoke/deno-smoke.ts
 */
import { existsSync, mkdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import {
  finish,
  makeSmokeDir,
  packageVersion,
  removeSmokeDir,
  REPO_ROOT,
  runScenario,
} from "./scenario.ts";

const denoLink = join(REPO_ROOT, "node_modules/.bin/deno");
if (!existsSync(denoLink)) {
  console.error(`Deno smoke failed: no deno at ${denoLink}: run npm ci first`);
  process.exit(1);
}
const deno = realpathSync(denoLink);
const denoDir = join(REPO_ROOT, ".cache/deno-dir");
mkdirSync(denoDir, { recursive: true });

const dir = makeSmokeDir("deno");
try {
  const report = await runScenario({
    label: "deno",
    dir,
    command: deno,
    prefixArgs: ["run", "-A", join(REPO_ROOT, "src/cli/main.ts")],
    expectedExe: deno,
    extraEnv: { DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
    expectedVersion: packageVersion(),
  });
  finish(report);
} finally {
  removeSmokeDir(dir);
}
