/**
 * Socket benchmark: `run.status` round trips against a real host process, beside a raw unix
 * socket echo server (also its own process) measured in the same run with the same client code.
 * Prints one JSON line: echo p50, status p50/p99 (one client), status requests/s (several
 * concurrent clients) and the p50 ratio (target: status within 1.5x of echo).
 *
 * Fair placement: a trivial echo server that lands on the client's CPU answers without a
 * cross-CPU wake-up, the host usually does not, so the ratio would mostly measure placement.
 * When `taskset` exists and there are at least two CPUs, this process (the client) is pinned to
 * CPU 0 and both servers to CPU 1 (`placement: "pinned"`); otherwise all float
 * (`placement: "unpinned"`).
 *
 *   npm run bench -- socket
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { FrameDecoder } from "../../src/protocol/framing.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { bySize } from "./_figures.ts";

const WARMUP = bySize(300, 30);
const ROUND_TRIPS = bySize(3000, 200);
const CONCURRENT_CLIENTS = 4;
const CONCURRENT_REQUESTS = bySize(4000, 400);
const HERE = fileURLToPath(import.meta.url);
const CLI = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

/** The baseline: answers each line with the same bytes, nothing else. */
function serveEcho(socketPath: string): void {
  const server = net.createServer((socket) => socket.pipe(socket));
  server.listen(socketPath, () => process.stdout.write("ready\n"));
  process.on("SIGTERM", () => server.close(() => process.exit(0)));
}

/** Pins this process to CPU 0; returns the command prefix that starts a server on CPU 1. */
function placeFairly(): string[] | null {
  if (availableParallelism() < 2) return null;
  const self = spawnSync("taskset", ["-apc", "0", String(process.pid)], { stdio: "ignore" });
  return self.status === 0 ? ["taskset", "-c", "1"] : null;
}

async function main(): Promise<void> {
  const pin = placeFairly();
  const start = (args: string[]) =>
    pin ? { command: pin[0], args: [...pin.slice(1), process.execPath, ...args] } : {
      command: process.execPath,
      args,
    };
  const root = mkdtempSync(join(tmpdir(), "pwb-"));
  const stateDir = join(root, "s");
  const children: ChildProcess[] = [];
  try {
    seedRun(stateDir);
    const echoPath = join(root, "echo.sock");
    const echoCommand = start([HERE, "--echo-server", echoPath]);
    const echo = spawn(echoCommand.command, echoCommand.args, {
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(echo);
    await waitForOutput(echo, "stdout", "ready");
    const hostCommand = start([CLI, "host", "run"]);
    const host = spawn(hostCommand.command, hostCommand.args, {
      stdio: ["ignore", "ignore", "pipe"],
      env: {
        ...process.env,
        PI_WORKFLOWS_STATE_DIR: stateDir,
        PI_CODING_AGENT_DIR: join(root, "a"),
      },
    });
    children.push(host);
    await waitForOutput(host, "stderr", "host.ready");

    const request = (id: number) =>
      JSON.stringify({
        clientId: "bench",
        operation: "run.status",
        payload: {},
        requestId: `bench-${id}`,
        runId: "run-bench",
        schema: "pi-workflows.host-request.v1",
      }) + "\n";

    const echoClient = await LineClient.connect(echoPath);
    const statusClient = await LineClient.connect(join(stateDir, "host.sock"));
    // Check the host really answers run.status before timing it.
    const first = await statusClient.roundTrip(request(0)) as { outcome?: string };
    if (first.outcome !== "accepted") throw new Error(`Benchmark setup failed: ${first.outcome}`);

    await timeRoundTrips(echoClient, WARMUP, request);
    await timeRoundTrips(statusClient, WARMUP, request);
    // Interleave the two measurements so machine noise hits both alike.
    const echoTimes: number[] = [];
    const statusTimes: number[] = [];
    for (let batch = 0; batch < 10; batch++) {
      echoTimes.push(...await timeRoundTrips(echoClient, ROUND_TRIPS / 10, request));
      statusTimes.push(...await timeRoundTrips(statusClient, ROUND_TRIPS / 10, request));
    }
    echoClient.close();
    statusClient.close();

    const clients = await Promise.all(
      Array.from(
        { length: CONCURRENT_CLIENTS },
        () => LineClient.connect(join(stateDir, "host.sock")),
      ),
    );
    const started = process.hrtime.bigint();
    await Promise.all(
      clients.map((client) =>
        timeRoundTrips(client, CONCURRENT_REQUESTS / CONCURRENT_CLIENTS, request)
      ),
    );
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    for (const client of clients) client.close();

    const echoP50 = percentile(echoTimes, 0.5);
    const statusP50 = percentile(statusTimes, 0.5);
    process.stdout.write(
      JSON.stringify({
        bench: "socket",
        placement: pin ? "pinned" : "unpinned",
        echo_p50_us: round(echoP50),
        status_p50_us: round(statusP50),
        status_p99_us: round(percentile(statusTimes, 0.99)),
        status_rps: Math.round(CONCURRENT_REQUESTS / seconds),
        ratio_p50: Math.round((statusP50 / echoP50) * 100) / 100,
      }) + "\n",
    );
  } finally {
    for (const child of children) {
      if (child.exitCode === null) child.kill("SIGTERM");
    }
    await Promise.all(children.map((child) => exited(child)));
    rmSync(root, { recursive: true, force: true });
  }
}

function seedRun(stateDir: string): void {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  try {
    const input = { task: "benchmark" };
    enqueueRun(store, {
      runId: "run-bench",
      workflowName: "bench",
      workflowRef: "builtin:bench",
      title: "Benchmark run",
      projectPath: stateDir,
      workflowSource: { root: { kind: "builtin", id: "bench", revision: "0" }, mounted: [] },
      definitionDigest: fingerprint("bench"),
      input,
      inputHash: fingerprint(input),
      binding: { executionMode: "headless" },
      // Never launched during the benchmark.
      availableAt: Date.UTC(2100, 0, 1),
    });
  } finally {
    closeStateStore(store);
  }
}

/** Sequential round trips; returns each one's latency in microseconds. */
async function timeRoundTrips(
  client: LineClient,
  count: number,
  request: (id: number) => string,
): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const line = request(i + 1);
    const start = process.hrtime.bigint();
    await client.roundTrip(line);
    times.push(Number(process.hrtime.bigint() - start) / 1000);
  }
  return times;
}

class LineClient {
  readonly #socket: net.Socket;
  readonly #decoder = new FrameDecoder();
  #waiting: ((value: unknown) => void) | null = null;

  private constructor(socket: net.Socket) {
    this.#socket = socket;
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      for (const frame of this.#decoder.push(chunk)) {
        const resolve = this.#waiting;
        this.#waiting = null;
        resolve?.(frame.ok ? frame.value : null);
      }
    });
  }

  static connect(path: string): Promise<LineClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(path, () => resolve(new LineClient(socket)));
      socket.once("error", reject);
    });
  }

  roundTrip(line: string): Promise<unknown> {
    return new Promise((resolve) => {
      this.#waiting = resolve;
      this.#socket.write(line);
    });
  }

  close(): void {
    this.#socket.destroy();
  }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}

function waitForOutput(
  child: ChildProcess,
  stream: "stdout" | "stderr",
  text: string,
): Promise<void> {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(
      () => reject(new Error(`Benchmark setup timed out waiting for ${text}`)),
      20_000,
    );
    child[stream]!.on("data", (chunk: Buffer) => {
      seen += chunk;
      if (seen.includes(text)) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once("exit", () => {
      clearTimeout(timer);
      reject(
        new Error(`Benchmark setup failed: a child exited before ${text}: ${seen.slice(-300)}`),
      );
    });
  });
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

if (process.argv[2] === "--echo-server") {
  serveEcho(process.argv[3]);
} else {
  await main();
}
