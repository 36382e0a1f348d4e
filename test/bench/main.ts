/**
 * `npm run bench -- <name>`: runs the benchmark program `test/bench/<name>.ts` in a child
 * process of the same runtime and passes its one JSON line through. Without a name, lists them.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

const dir = fileURLToPath(new URL(".", import.meta.url));
const available = readdirSync(dir)
  .filter((f) => f.endsWith(".ts") && f !== "main.ts" && !f.startsWith("_"))
  .map((f) => f.slice(0, -3))
  .sort();
const name = process.argv[2];

if (!name) {
  console.log(`Usage: npm run bench -- <name>\nBenchmarks: ${available.join(", ")}`);
  process.exit(0);
}
if (!/^[a-z0-9-]+$/.test(name) || !existsSync(`${dir}${name}.ts`)) {
  console.error(`Unknown benchmark: ${name} (available: ${available.join(", ")})`);
  process.exit(2);
}
const result = spawnSync(process.execPath, [`${dir}${name}.ts`, ...process.argv.slice(3)], {
  stdio: "inherit",
});
process.exit(result.status ?? 1);
