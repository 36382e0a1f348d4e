/**
 * Deno smoke: `deno run -A src/cli/main.ts` (the `deno` npm package) starts a host that spawns
 * Deno workers, and runs the shared smoke scenario (see scenario.ts) from the source tree.
 * Then `deno test -A` runs an example's kit tests (docs/testing.md: the kit works under Deno's test
 * runner, type-checked as Deno checks it). DENO_DIR lives in `.cache/deno-dir`. Prints one JSON
 * line; exits 1 on failure.
 *
 *   node test/smoke/deno-smoke.ts
 */
import { spawnSync } from "node:child_process";
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
  const started = performance.now();
  const denoTest = spawnSync(deno, ["test", "-A", "examples/branch.workflow.test.ts"], {
    cwd: REPO_ROOT,
    env: { ...process.env, HOME: dir.home, DENO_DIR: denoDir, DENO_NO_UPDATE_CHECK: "1" },
    encoding: "utf8",
    timeout: 300_000,
  });
  const denoTestOk = denoTest.status === 0 && /\| 2 passed \| 0 failed/.test(denoTest.stdout);
  if (!denoTestOk) {
    console.error(
      `deno test failed (exit ${denoTest.status}):\n${denoTest.stdout}${denoTest.stderr}`,
    );
  }
  finish(
    { ...report, ok: report.ok && denoTestOk },
    { denoTest: { ok: denoTestOk, ms: Math.round(performance.now() - started) } },
  );
} finally {
  removeSmokeDir(dir);
}
