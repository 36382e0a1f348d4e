/**
 * Shared by the idle-cost benchmark and test: a state directory seeded with many runs waiting at
 * a human decision (each with an `onTimeout` default far ahead, so the host's deadline timer has
 * work pending), a real `host run` process on it, and its CPU time and wake-ups from /proc.
 * Files starting with `_` are helpers, not benchmarks (main.ts skips them).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { waitRun } from "../../src/state/transitions/run-park.ts";
import { finishWorkerEpoch } from "../../src/state/transitions/workers.ts";

const CLI = resolve(import.meta.dirname, "..", "..", "src", "cli", "main.ts");

const REQUEST = {
  schema: "pi-workflows.human-decision-request.v1",
  audience: "owner",
  title: "Ship release?",
  subject: "release",
  presentation: {
    schema: "pi-workflows.decision-presentation.v1",
    summary: "Approve the release",
    blocks: [{ kind: "bullets", items: ["change one", "change two", "change three"] }],
  },
  revision: 1,
  choices: { approve: { label: "Approve" }, reject: { label: "Reject" } },
  onTimeout: { afterMs: 3_600_000, response: { choice: "approve" } },
};

/** Seeds `count` runs waiting at a human decision whose default falls due in an hour or more. */
export function seedWaitingDecisions(stateDir: string, count: number): void {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  store.db.exec("PRAGMA synchronous = NORMAL");
  const host = acquireHostClaim(store, { ownerId: "seed", token: "seed", ttlMs: 600_000 });
  const hostEpoch = host.epoch;
  try {
    for (let i = 0; i < count; i++) {
      const { runId } = enqueueRun(store, {
        workflowName: "gate",
        workflowRef: "builtin:gate",
        title: `Gate ${i}`,
        projectPath: "/project",
        workflowSource: { root: { kind: "builtin", id: "gate" }, mounted: [] },
        definitionDigest: "sha256:def",
        input: {},
        inputHash: "sha256:in",
        binding: { executionMode: "headless" },
      });
      const workerEpoch = `seed-${i}`;
      const { claim } = claimRunForLaunch(store, {
        runId,
        ownerId: "seed",
        hostEpoch,
        token: randomIds.token(),
        ttlMs: 60_000,
        workerEpoch,
        launchEnvelopeHash: "sha256:env",
      });
      markWorkerLive(store, claim, { workerEpoch, pid: 1, startIdentity: "1:0" });
      const attemptId = randomIds.next("attempt");
      recordNodeStarted(store, claim, {
        attemptId,
        nodeId: "gate",
        nodeKind: "humanDecision",
        effect: "pure",
        deadlineAt: null,
      });
      waitRun(store, claim, {
        attemptId,
        nodeId: "gate",
        kind: "humanDecision",
        request: REQUEST,
        timeoutDefault: { afterMs: 3_600_000 + i * 1000, response: { choice: "approve" } },
      });
      finishWorkerEpoch(store, {
        workerEpoch,
        status: "exited",
        exitCode: 0,
        signal: null,
        diagnosticHash: null,
      });
    }
  } finally {
    releaseHostClaim(store, host);
    closeStateStore(store);
  }
}

export interface HostProcess {
  child: ChildProcess;
  stderr(): string;
  stop(): Promise<void>;
}

/** Starts `host run` on `stateDir` (with `env` on top) and resolves once it is ready. */
export function startHost(
  stateDir: string,
  root: string,
  env: NodeJS.ProcessEnv = {},
): Promise<HostProcess> {
  const child = spawn(process.execPath, [CLI, "host", "run"], {
    env: {
      ...process.env,
      PI_WORKFLOWS_STATE_DIR: stateDir,
      PI_CODING_AGENT_DIR: join(root, "agent"),
      PI_WORKFLOWS_HOST_IDLE_MS: "3600000",
      ...env,
    },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  const exited = new Promise<void>((res) => child.on("exit", () => res()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
    await exited;
    clearTimeout(timer);
  };
  return new Promise((res, rej) => {
    const timer = setTimeout(() => {
      void stop();
      rej(new Error(`Host not ready in time: ${stderr.slice(-500)}`));
    }, 30_000);
    child.stderr!.on("data", (chunk) => {
      stderr += chunk;
      if (stderr.includes("host.ready")) {
        clearTimeout(timer);
        res({ child, stderr: () => stderr, stop });
      }
    });
    child.on("exit", () => {
      clearTimeout(timer);
      rej(new Error(`Host exited before ready: ${stderr.slice(-500)}`));
    });
  });
}

export interface ProcessUsage {
  /** User + system CPU time in milliseconds. */
  cpuMs: number;
  /** Voluntary context switches: how often the process went to sleep and was woken. */
  wakeups: number;
}

/** CPU time and wake-ups of a live process, from /proc (Linux). */
export function processUsage(pid: number): ProcessUsage {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // Fields 14 and 15 (utime, stime) counted from 1, i.e. 11 and 12 after the command name.
  const ticks = Number(fields[11]) + Number(fields[12]);
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const wakeups = Number(/voluntary_ctxt_switches:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { cpuMs: ticks * 10, wakeups };
}

/** CPU and wake-ups of `pid` over `ms` of idleness (after a settle period). */
export async function idleUsage(pid: number, ms: number): Promise<ProcessUsage> {
  await new Promise((r) => setTimeout(r, 1500));
  const before = processUsage(pid);
  await new Promise((r) => setTimeout(r, ms));
  const after = processUsage(pid);
  return { cpuMs: after.cpuMs - before.cpuMs, wakeups: after.wakeups - before.wakeups };
}
