/**
 * `npm run bench -- load`: the host under load. 1,000 runs of a small workflow (three compute
 * nodes) are queued, then a real host process (`runHost`, the default worker concurrency)
 * works through them while 50 clients poll `run.status` (a random run each time) and `run.list`
 * for 30 s. Prints one JSON line: completed runs/s in the window, `run.status` p50/p99/max on
 * the host side (decoded frame to response, `RunHostOptions.onServed`) and on the client side
 * (round trip), the host's event-loop delay p50/p99/max from the first request until every run
 * ended (the wait of a request that arrives while the loop is held), the duration of one
 * synchronous single-row commit on the same disk sampled every 100 ms in the window (each of the
 * host's commits holds its loop about that long), the host's peak RSS, and, once every run
 * ended, `lost` (runs that did not complete) and `duplicated` (a node with two committed
 * outcomes, or two completion events).
 *
 *   npm run bench -- load [runs=1000] [clients=50] [seconds=30]
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { DatabaseSync } from "node:sqlite";
import { FrameDecoder } from "../../src/protocol/framing.ts";
import { HOST_REQUEST_SCHEMA } from "../../src/protocol/host-request.ts";
import { createSupervision } from "../../src/host/host-supervision.ts";
import { applyWritePragmas, closeStateStore, openStateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { benchHostContext, enqueueResolved, releaseBenchHost } from "./_host-context.ts";
import { benchArgs, bySize } from "./_figures.ts";

const HERE = fileURLToPath(import.meta.url);
// Smoke: twice the host's default 4 workers, so runs still queue; each run is a worker start.
const RUNS = Number(benchArgs[0] ?? bySize(1000, 8));
const CLIENTS = Number(benchArgs[1] ?? bySize(50, 2));
const SECONDS = Number(benchArgs[2] ?? bySize(30, 1));

const WORKFLOW = `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "small",
  startAt: "a",
  nodes: {
    a: compute({ run: ({ input }) => ({ n: input.n }) }),
    b: compute({ run: ({ outputs }) => ({ n: outputs.a.n + 1 }) }),
    c: compute({ run: ({ outputs }) => ({ n: outputs.b.n + 1 }) }),
  },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "c" }],
});
`;

/**
 * The host child: runs the real host and writes its host-side status times and its event-loop
 * delay (how long a ready request can wait before the host reads it) at the end.
 */
async function hostChild(statsPath: string): Promise<void> {
  const { runHost } = await import("../../src/host/host-main.ts");
  const status: number[] = [];
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  await runHost({
    handleSignals: true,
    onServed: (operation, ms) => {
      // The loop delay counts from the clients' first request on (not the host's start-up).
      if (status.length === 0) delay.reset();
      if (operation === "run.status") status.push(ms);
    },
  });
  delay.disable();
  const ms = (ns: number) => ns / 1e6;
  writeFileSync(
    statsPath,
    JSON.stringify({
      status,
      loopDelay: {
        p50: ms(delay.percentile(50)),
        p99: ms(delay.percentile(99)),
        max: ms(delay.max),
      },
    }),
  );
  process.exit(0);
}

function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

const r2 = (x: number) => Math.round(x * 100) / 100;

class Client {
  readonly #socket: net.Socket;
  readonly #decoder = new FrameDecoder();
  #waiting: ((value: unknown) => void) | null = null;
  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.on("data", (chunk: Buffer) => {
      for (const frame of this.#decoder.push(chunk)) {
        const resolve = this.#waiting;
        this.#waiting = null;
        resolve?.(frame.ok ? frame.value : null);
      }
    });
  }
  static connect(path: string): Promise<Client> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(path, () => resolve(new Client(socket)));
      socket.once("error", reject);
    });
  }
  call(request: Record<string, unknown>): Promise<unknown> {
    return new Promise((resolve) => {
      this.#waiting = resolve;
      this.#socket.write(JSON.stringify(request) + "\n");
    });
  }
  close(): void {
    this.#socket.destroy();
  }
}

function waitForText(child: ChildProcess, text: string, ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`Benchmark setup: no ${text}`)), ms);
    child.stderr!.on("data", (chunk: Buffer) => {
      seen += chunk;
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", () => reject(new Error(`Host exited early: ${seen.slice(-300)}`)));
  });
}

function rssKb(pid: number): number {
  try {
    const line = readFileSync(`/proc/${pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/);
    return line ? Number(line[1]) : 0;
  } catch {
    return 0;
  }
}

async function main(): Promise<void> {
  const root = mkdtempSync(join(tmpdir(), "piw-bench-load-"));
  const stateDir = join(root, "state");
  const project = join(root, "project");
  mkdirSync(project, { recursive: true });
  const workflowPath = join(project, "small.workflow.ts");
  writeFileSync(workflowPath, WORKFLOW);
  let host: ChildProcess | null = null;
  try {
    // Queue the runs before the host starts (resolved once by the real resolver).
    const ctx = benchHostContext(stateDir, 30_000);
    const resolver = createSupervision(ctx, {
      childEnv: { PI_CODING_AGENT_DIR: join(root, "agent") },
    });
    const resolved = await resolver.resolve({
      workflow: workflowPath,
      input: { n: 1 },
      cwd: project,
    });
    if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
    const runIds: string[] = [];
    for (let i = 0; i < RUNS; i++) {
      runIds.push(
        enqueueResolved(ctx.store, resolved, { projectPath: project })
          .runId,
      );
    }
    await resolver.shutdown();
    // Release the bench's host claim so the real host starts at once.
    releaseBenchHost(ctx);
    closeStateStore(ctx.store);

    const statsPath = join(root, "host-stats.json");
    host = spawn(process.execPath, [HERE, "--host", statsPath], {
      stdio: ["ignore", "ignore", "pipe"],
      env: {
        ...process.env,
        PI_WORKFLOWS_STATE_DIR: stateDir,
        PI_CODING_AGENT_DIR: join(root, "agent"),
        PI_WORKFLOWS_HOST_IDLE_MS: "600000",
      },
    });
    await waitForText(host, "host.ready", 30_000);
    const socketPath = join(stateDir, "host.sock");
    const clients = await Promise.all(
      Array.from({ length: CLIENTS }, () => Client.connect(socketPath)),
    );
    let id = 0;
    const request = (operation: string, runId?: string) => ({
      schema: HOST_REQUEST_SCHEMA,
      requestId: `load-${++id}`,
      clientId: "bench-load",
      operation,
      ...(runId ? { runId } : {}),
      payload: operation === "run.list" ? { limit: 20 } : {},
    });
    const statusTimes: number[] = [];
    let peakRss = 0;
    const rssTimer = setInterval(() => peakRss = Math.max(peakRss, rssKb(host!.pid!)), 250);
    // What one synchronous commit costs on this disk meanwhile: the host's loop is held that
    // long by each of its own commits (node:sqlite commits on the main thread).
    const probe = new DatabaseSync(join(root, "probe.sqlite"));
    applyWritePragmas(probe);
    probe.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
    const probeInsert = probe.prepare("INSERT INTO t (v) VALUES ('x')");
    const commitTimes: number[] = [];
    const probeTimer = setInterval(() => {
      const t = performance.now();
      probe.exec("BEGIN IMMEDIATE");
      probeInsert.run();
      probe.exec("COMMIT");
      commitTimes.push(performance.now() - t);
    }, 100);
    const started = performance.now();
    const until = started + SECONDS * 1000;
    let failures = 0;
    await Promise.all(clients.map(async (client, i) => {
      let n = i;
      while (performance.now() < until) {
        const status = n++ % 2 === 0;
        const t = performance.now();
        const answer = await client.call(
          status
            ? request("run.status", runIds[Math.floor(Math.random() * RUNS)])
            : request("run.list"),
        ) as { outcome?: string };
        if (status) statusTimes.push(performance.now() - t);
        if (answer?.outcome !== "accepted") failures++;
      }
    }));
    const windowS = (performance.now() - started) / 1000;
    clearInterval(rssTimer);
    clearInterval(probeTimer);
    probe.close();
    for (const client of clients) client.close();

    // Then every run must end: completed once, none lost.
    const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
    const counts = () =>
      queryAll<{ state: string; n: number }>(
        store,
        "SELECT state, COUNT(*) AS n FROM runs GROUP BY state",
      );
    const completedInWindow = queryAll<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM runs WHERE state = 'completed' AND finished_at <= :at",
      { at: Date.now() },
    )[0].n;
    const deadline = Date.now() + 900_000;
    while (Date.now() < deadline) {
      const open = counts().filter((c) =>
        !["completed", "failed", "cancelled", "timed_out"].includes(c.state)
      );
      if (open.length === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const completed = counts().find((c) => c.state === "completed")?.n ?? 0;
    const duplicated = queryAll<{ n: number }>(
      store,
      "SELECT COUNT(*) AS n FROM (SELECT run_id FROM node_attempts WHERE state = 'ok' " +
        "GROUP BY run_id, node_id HAVING COUNT(*) > 1 UNION ALL SELECT run_id FROM events " +
        "WHERE type = 'run.completed' GROUP BY run_id HAVING COUNT(*) > 1)",
    )[0].n;
    const runsNow = queryAll<{ n: number }>(store, "SELECT COUNT(*) AS n FROM runs")[0].n;
    closeStateStore(store);

    const stopper = await Client.connect(socketPath);
    await stopper.call(request("host.stop"));
    stopper.close();
    await new Promise((resolve) => host!.once("exit", resolve));
    host = null;
    const stats = JSON.parse(readFileSync(statsPath, "utf8")) as {
      status: number[];
      loopDelay: { p50: number; p99: number; max: number };
    };
    const hostTimes = stats.status;
    console.log(JSON.stringify({
      bench: "load",
      runs: RUNS,
      clients: CLIENTS,
      window_s: r2(windowS),
      completed_in_window: completedInWindow,
      completed_runs_per_s: r2(completedInWindow / windowS),
      status_requests: statusTimes.length,
      failed_requests: failures,
      status_p50_ms: r2(percentile(hostTimes, 0.5)),
      status_p99_ms: r2(percentile(hostTimes, 0.99)),
      status_max_ms: r2(Math.max(0, ...hostTimes)),
      client_status_p50_ms: r2(percentile(statusTimes, 0.5)),
      client_status_p99_ms: r2(percentile(statusTimes, 0.99)),
      client_status_max_ms: r2(Math.max(0, ...statusTimes)),
      loop_delay_p50_ms: r2(stats.loopDelay.p50),
      loop_delay_p99_ms: r2(stats.loopDelay.p99),
      loop_delay_max_ms: r2(stats.loopDelay.max),
      disk_commit_p50_ms: r2(percentile(commitTimes, 0.5)),
      disk_commit_p99_ms: r2(percentile(commitTimes, 0.99)),
      disk_commit_max_ms: r2(Math.max(0, ...commitTimes)),
      host_peak_rss_mb: r2(peakRss / 1024),
      lost: RUNS - completed + Math.max(0, runsNow - RUNS),
      duplicated,
    }));
  } finally {
    if (host && host.exitCode === null) {
      host.kill("SIGKILL");
    }
    rmSync(root, { recursive: true, force: true });
  }
}

if (process.argv[2] === "--host") await hostChild(process.argv[3]);
else await main();
