/**
 * `npm run bench -- host-memory [starts=40] [rounds=3] [outputKiB=2] [settleS=3]`: the resident
 * memory of a real host
 * process (`host run`) under bursts of concurrent `run.start` requests. Each round sends
 * `starts` starts of a small workflow at once over separate connections, waits until every run
 * completed, then waits for the host to settle. Prints the host's RSS at the start, its peak, and
 * after each round settled (MiB), beside the RSS of an idle `node -e` in the same run.
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectHost } from "../../src/client/host-connection.ts";
import { hostSocketPath } from "../../src/client/socket-path.ts";
import { waitFor } from "../../src/cli/wait-for.ts";
import { benchArgs, bySize } from "./_figures.ts";

const STARTS = Number(benchArgs[0] ?? bySize(40, 2));
const ROUNDS = Number(benchArgs[1] ?? bySize(3, 1));
/** KiB of output each of the workflow's four nodes returns. */
const OUTPUT_KIB = Number(benchArgs[2] ?? 2);
/** Seconds the host idles after each round before its RSS is read. */
const SETTLE_S = Number(benchArgs[3] ?? bySize(3, 1));
const CLI = new URL("../../src/cli/main.ts", import.meta.url).pathname;
const root = mkdtempSync(join(tmpdir(), "piw-bench-mem-"));
const stateDir = join(root, "s");
const project = join(root, "p");
mkdirSync(project);
writeFileSync(
  join(project, "small.workflow.ts"),
  `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "small",
  input: (raw) => raw,
  startAt: "a",
  nodes: {
    a: compute({ run: ({ input }) => ({ i: input.i, pad: "a".repeat(${OUTPUT_KIB * 1024}) }) }),
    b: compute({ run: ({ input }) => ({ i: input.i, pad: "b".repeat(${OUTPUT_KIB * 1024}) }) }),
    c: compute({ run: ({ input }) => ({ i: input.i, pad: "c".repeat(${OUTPUT_KIB * 1024}) }) }),
    d: compute({ run: ({ outputs }) => outputs.a.i }),
  },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "c" }, { from: "c", to: "d" }],
});
`,
);

const rssMiB = (pid: number): number => {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Math.round(Number(match[1]) / 102.4) / 10 : 0;
};

const env = {
  ...process.env,
  PI_WORKFLOWS_STATE_DIR: stateDir,
  PI_CODING_AGENT_DIR: join(root, "agent"),
  PI_WORKFLOWS_HOST_IDLE_MS: "600000",
};
const hostArgs = [CLI, "host", "run"];
const host = spawn(process.execPath, hostArgs, { env, stdio: ["ignore", "ignore", "pipe"] });
let log = "";
host.stderr!.on("data", (d) => (log += d));
const socket = hostSocketPath(stateDir);
await waitFor(() => log.includes("host.ready"), 30_000, "host not ready");

const baseline = spawnSync(process.execPath, ["-e", "console.log(process.memoryUsage().rss)"], {
  encoding: "utf8",
});
const report: Record<string, unknown> = {
  bench: "host-memory",
  starts: STARTS,
  rounds: ROUNDS,
  output_kib: OUTPUT_KIB,
  settle_s: SETTLE_S,
  node_e_rss_mib: Math.round(Number(baseline.stdout) / 104857.6) / 10,
  host_start_rss_mib: rssMiB(host.pid!),
};
let peak = 0;
const sampler = setInterval(() => (peak = Math.max(peak, rssMiB(host.pid!))), 50);
const settled: number[] = [];
try {
  for (let round = 0; round < ROUNDS; round++) {
    const connections = await Promise.all(
      Array.from({ length: STARTS }, () => connectHost(socket)),
    );
    const started = await Promise.all(connections.map((c, i) =>
      c.request("run.start", {
        payload: {
          workflow: "small.workflow.ts",
          cwd: project,
          input: { i: round * STARTS + i },
          executionMode: "headless",
        },
        timeoutMs: 300_000,
      })
    ));
    const ids = started.map((r) => (r.receipt as { run: { runId: string } }).run.runId);
    const status = connections[0];
    await waitFor(
      async () => {
        for (const runId of ids) {
          const answer = await status.request("run.status", { runId });
          const state = (answer.receipt as { run: { state: string } }).run.state;
          if (state !== "completed") return false;
        }
        return true;
      },
      600_000,
      "runs did not complete",
      250,
    );
    for (const c of connections) c.close();
    await new Promise((r) => setTimeout(r, SETTLE_S * 1000));
    settled.push(rssMiB(host.pid!));
  }
} finally {
  clearInterval(sampler);
  host.kill("SIGTERM");
  await new Promise((r) => host.once("exit", r));
  rmSync(root, { recursive: true, force: true });
}
report.host_peak_rss_mib = peak;
report.host_settled_rss_mib = settled;
console.log(JSON.stringify(report));
