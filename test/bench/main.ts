/**
 * `npm run bench -- <name> [args]`: runs the benchmark program `test/bench/<name>.ts` in a child
 * process of the same runtime and passes its one JSON line through. Without a name, lists every
 * benchmark with what it measures (`_catalogue.ts`).
 *
 * `npm run bench -- --smoke`: CI's check that no benchmark has rotted. Every benchmark runs in its
 * short mode (`--smoke`: small sizes, one repeat, no warm-ups; the npm bundle the benches start
 * processes from is built once, here), two at a time, and must exit 0 and print one
 * JSON line holding every field the catalogue lists for it. Figures are not checked (CI machines
 * are noisy). Ends with `benches: N passed, N failed`; exits 1 when any failed.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { SHARED_BUNDLE_ENV } from "./_bundle.ts";
import { BENCHES } from "./_catalogue.ts";

const dir = fileURLToPath(new URL(".", import.meta.url));
const binary = fileURLToPath(new URL("../../dist/pi-workflows", import.meta.url));
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "main.ts" && !f.startsWith("_"))
  .map((f) => f.slice(0, -3))
  .sort();
/** A smoke bench that has not finished by then failed (it hung). */
const SMOKE_DEADLINE_MS = 180_000;
const name = process.argv[2];

if (!name) {
  const width = Math.max(...available.map((n) => n.length));
  console.log("Usage: npm run bench -- <name> [args]   (npm run bench -- --smoke: all, short)");
  for (const bench of available) {
    console.log(`  ${bench.padEnd(width)}  ${BENCHES[bench]?.what ?? "(not in _catalogue.ts)"}`);
  }
  process.exit(0);
}
if (name === "--smoke") process.exit(await smokeAll());
if (!/^[a-z0-9-]+$/.test(name) || !existsSync(`${dir}${name}.ts`)) {
  console.error(`Unknown benchmark: ${name} (available: ${available.join(", ")})`);
  process.exit(2);
}
const result = spawnSync(process.execPath, [`${dir}${name}.ts`, ...process.argv.slice(3)], {
  stdio: "inherit",
});
process.exit(result.status ?? 1);

async function smokeAll(): Promise<number> {
  // One npm bundle for every bench that starts hosts or workers from it (_bundle.ts), built here
  // from the current source, not once in each of them.
  const { bundleCli } = await import("../../compile/build.ts");
  const bundleDir = mkdtempSync(join(tmpdir(), "piw-bench-bundle-"));
  try {
    process.env[SHARED_BUNDLE_ENV] = await bundleCli(join(bundleDir, "pi-workflows.mjs"));
    return await smokeEach();
  } finally {
    rmSync(bundleDir, { recursive: true, force: true });
  }
}

async function smokeEach(): Promise<number> {
  const queue = [...available];
  let failed = 0;
  let passed = 0;
  const worker = async () => {
    for (let bench = queue.shift(); bench !== undefined; bench = queue.shift()) {
      const started = performance.now();
      const problem = await smokeOne(bench);
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      if (problem === null) passed++;
      else failed++;
      console.log(
        `${problem === null ? "ok  " : "FAIL"} ${bench} (${seconds} s)${
          problem === null ? "" : `: ${problem}`
        }`,
      );
    }
  };
  await Promise.all([worker(), worker()]);
  console.log(`benches: ${passed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

/** Runs one bench with `--smoke`; null when it printed its fields, else what went wrong. */
async function smokeOne(bench: string): Promise<string | null> {
  const entry = BENCHES[bench];
  if (!entry) return "not listed in test/bench/_catalogue.ts (what it measures and its fields)";
  if (entry.needsBinary && !existsSync(binary)) return "needs dist/pi-workflows: npm run compile";
  const child = spawn(process.execPath, [`${dir}${bench}.ts`, "--smoke"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s: string) => stdout += s);
  child.stderr.setEncoding("utf8").on("data", (s: string) => stderr = (stderr + s).slice(-2000));
  const timer = setTimeout(() => child.kill("SIGKILL"), SMOKE_DEADLINE_MS);
  const code = await new Promise<number | string>((resolve) =>
    child.on("close", (c, signal) => resolve(c ?? signal ?? "unknown"))
  );
  clearTimeout(timer);
  const lastError = stderr.trim().split("\n").filter(Boolean).slice(-3).join(" | ");
  if (code !== 0) return `exited ${code}${lastError ? `: ${lastError}` : ""}`;
  const lines = stdout.trim().split("\n").filter((l) => l.trim() !== "");
  if (lines.length !== 1) return `printed ${lines.length} lines on stdout, not one JSON line`;
  let figures: Record<string, unknown>;
  try {
    figures = JSON.parse(lines[0]);
  } catch {
    return "its stdout line is not JSON";
  }
  if (figures.bench !== bench) return `its JSON says bench ${JSON.stringify(figures.bench)}`;
  const missing = entry.fields.filter((f) => !(f in figures));
  return missing.length === 0 ? null : `missing documented fields: ${missing.join(", ")}`;
}
