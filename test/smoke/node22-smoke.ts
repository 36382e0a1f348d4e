/**
 * Node 22 smoke: the oldest Node that Pi supports runs the CLI from source (type stripping is on
 * by default from 22.18) and its host spawns Node 22 workers, through the shared smoke scenario
 * (see scenario.ts), and then the same with the npm package's bundle `dist/pi-workflows.mjs` when
 * it has been built. Node 22 comes from npm into `.cache/node22`, installed on first use, so
 * nothing newer than 22 can sneak in. Prints one JSON line per scenario; exits 1 on failure.
 *
 *   node test/smoke/node22-smoke.ts
 */
import { execFileSync } from "node:child_process";
import { existsSync, realpathSync } from "node:fs";
import { join } from "node:path";
import {
  finish,
  makeSmokeDir,
  packageVersion,
  removeSmokeDir,
  REPO_ROOT,
  runScenario,
} from "./scenario.ts";

const NODE22 = "22.23.3";
const prefix = join(REPO_ROOT, ".cache/node22");
const nodeLink = join(prefix, "node_modules/node/bin/node");
if (!existsSync(nodeLink)) {
  // Not `npm install` in the repo: a `node` package there would take over node_modules/.bin/node.
  execFileSync("npm", ["install", "--no-save", "--prefix", prefix, `node@${NODE22}`], {
    stdio: ["ignore", "ignore", "inherit"],
    timeout: 300_000,
  });
}
const node = realpathSync(nodeLink);
const version = execFileSync(node, ["--version"], { encoding: "utf8" }).trim();
if (version !== `v${NODE22}`) {
  console.error(`Node 22 smoke failed: ${nodeLink} is ${version}, expected v${NODE22}`);
  process.exit(1);
}

// From a checkout the CLI runs from source; the npm package runs the bundle (bin/ imports it).
const entries: Array<[string, string]> = [["node22-source", join(REPO_ROOT, "src/cli/main.ts")]];
const bundle = join(REPO_ROOT, "dist/pi-workflows.mjs");
if (existsSync(bundle)) entries.push(["node22-bundle", bundle]);
else console.error(`Node 22 smoke: no ${bundle} (npm run compile makes it); bundle not tested`);

for (const [label, entry] of entries) {
  const dir = makeSmokeDir(label);
  try {
    const report = await runScenario({
      label,
      dir,
      command: node,
      prefixArgs: [entry],
      expectedExe: node,
      expectedVersion: packageVersion(),
    });
    finish(report, { node: version });
  } finally {
    removeSmokeDir(dir);
  }
}
