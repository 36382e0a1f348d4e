/**
 * `npm run bench -- startup`: start-up of the compiled binary (`pi-workflows --version`) beside
 * a bare `node -e 0` of the Node it was built from, measured interleaved in the same run. The
 * launcher answers `--version` itself; `--help` shows the cost of loading the whole CLI, and the
 * npm bundle and the source entry under the same Node are there for context. Prints one JSON
 * line; the target is `ratio` (binary `--version` median / node median) within 1.1.
 *
 *   npm run compile && npm run bench -- startup [runs=30] [binary=dist/pi-workflows]
 */
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { benchArgs, bySize } from "./_figures.ts";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const RUNS = Number(benchArgs[0] ?? bySize(30, 3));
const binary = resolve(benchArgs[1] ?? join(repo, "dist/pi-workflows"));
const bundle = join(repo, "dist/pi-workflows.mjs");
const WARMUPS = 3;

if (!Number.isInteger(RUNS) || RUNS < 1) {
  console.error(`Startup benchmark failed: runs must be a positive integer: ${benchArgs[0]}`);
  process.exit(2);
}
if (!existsSync(binary)) {
  console.error(`Startup benchmark failed: no binary at ${binary}: run npm run compile first`);
  process.exit(1);
}

interface Subject {
  name: string;
  command: string;
  args: string[];
  samples: number[];
}

const subjects: Subject[] = [
  { name: "node", command: process.execPath, args: ["-e", "0"], samples: [] },
  { name: "binary", command: binary, args: ["--version"], samples: [] },
  // `--help` goes through the whole CLI (the embedded bundle and its code cache).
  { name: "binary_help", command: binary, args: ["--help"], samples: [] },
];
if (existsSync(bundle)) {
  subjects.push({
    name: "bundle",
    command: process.execPath,
    args: [bundle, "--version"],
    samples: [],
  });
}
subjects.push({
  name: "source",
  command: process.execPath,
  args: [join(repo, "src/cli/main.ts"), "--version"],
  samples: [],
});

// A clean environment: a user's NODE_OPTIONS must not slow one subject and not the other.
const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: process.env.HOME ?? "/" };

function timeOnce(subject: Subject): number {
  const start = performance.now();
  const result = spawnSync(subject.command, subject.args, {
    env,
    stdio: "ignore",
    timeout: 30_000,
    killSignal: "SIGKILL",
  });
  const ms = performance.now() - start;
  if (result.status !== 0) {
    throw new Error(
      `Startup benchmark failed: ${subject.name} exited ${result.status ?? result.signal}`,
    );
  }
  return ms;
}

for (let i = 0; i < RUNS + WARMUPS; i++) {
  // Interleaved, so every subject sees the same machine load.
  for (const subject of subjects) {
    const ms = timeOnce(subject);
    if (i >= WARMUPS) subject.samples.push(ms);
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const round = (n: number) => Math.round(n * 10) / 10;
const medians = Object.fromEntries(subjects.map((s) => [s.name, median(s.samples)]));
const report: Record<string, unknown> = { bench: "startup", runs: RUNS };
for (const subject of subjects) report[`${subject.name}_median_ms`] = round(medians[subject.name]);
const ratio = (name: string) => Math.round((medians[name] / medians.node) * 100) / 100;
report.ratio = ratio("binary");
report.help_ratio = ratio("binary_help");
report.target_ratio = 1.1;
console.log(JSON.stringify(report));
