/**
 * `npm run bench -- takeover`: `kill -9` of the host while a run's worker is inside a node, then
 * one `run.status` through the client (which starts the next host on demand): time to a new host
 * serving it and to the run moving again (its node running anew in the next host's worker),
 * median and range over N kills. Two variants in the same run: the CLI from source (Node strips
 * types at start-up) and bundled into one file (what the npm package ships), beside the start-up
 * of a bare `node -e 0`. Prints one JSON line.
 *
 *   npm run bench -- takeover [kills=7]
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  killAndTime,
  setUpTakeover,
  summary,
  type TakeoverSample,
} from "../support/takeover-timing.ts";
import { benchArgs, bySize } from "./_figures.ts";
import { benchBundle } from "./_bundle.ts";

const KILLS = Number(benchArgs[0] ?? bySize(7, 1));

async function measure(startCommand?: { command: string; args: string[] }) {
  const setup = await setUpTakeover(process.env, startCommand);
  try {
    const samples: TakeoverSample[] = [];
    for (let i = 0; i < KILLS; i++) samples.push(await killAndTime(setup));
    return {
      serving_ms: summary(samples.map((s) => s.servingMs)),
      moving_ms: summary(samples.map((s) => s.movingMs)),
    };
  } finally {
    await setup.cleanup();
  }
}

const bare: number[] = [];
for (let i = 0; i < 5; i++) {
  const started = performance.now();
  spawnSync(process.execPath, ["-e", "0"]);
  bare.push(performance.now() - started);
}

const dir = mkdtempSync(join(tmpdir(), "pwb-"));
try {
  const bundle = await benchBundle(join(dir, "pi-workflows.mjs"));
  const source = await measure();
  const bundled = await measure({ command: process.execPath, args: [bundle, "host", "run"] });
  console.log(JSON.stringify({
    bench: "takeover",
    kills: KILLS,
    node_e0_ms: Math.round(summary(bare).median),
    source,
    bundled,
    target_ms: 1000,
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
