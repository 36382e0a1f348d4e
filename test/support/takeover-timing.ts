/**
 * Measures host takeover with real processes: a run holds a worker inside a compute node, the
 * host is SIGKILLed, and the next client command (`run.status` through `createHostClient`, which
 * starts the next host on demand) is timed until (a) a new host serves it and (b) the run moves
 * again (the node's callback runs anew in a new worker; it stamps `Date.now()` in a side file).
 * Used by test/crash/takeover-time.test.ts and `npm run bench -- takeover`.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createHostClient, type HostClient } from "../../src/client/host-client.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { queryOne } from "../../src/state/statements.ts";
import { removeTempRoot } from "./temp-root.ts";
import { waitFor } from "./wait.ts";
import { shareWorkerCompileCache } from "./worker-compile-cache.ts";

export interface TakeoverSample {
  /** From the SIGKILL to the answer of the client command that started the next host. */
  servingMs: number;
  /** From the SIGKILL to the moment the node's callback ran again in the next host's worker. */
  movingMs: number;
}

export interface TakeoverSetup {
  root: string;
  env: Record<string, string | undefined>;
  client: HostClient;
  runId: string;
  marks: string;
  /** Stops every process of this setup (SIGKILL, by PID, waited for), then removes its root. */
  cleanup(): Promise<void>;
}

const HOLD_WORKFLOW = (marks: string, kind: "compute" | "action") => `
import { appendFileSync } from "node:fs";
import { ${kind}, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "hold",
  startAt: "hold",
  nodes: {
    hold: ${kind}({
      run: async () => {
        appendFileSync(${JSON.stringify(marks)}, Date.now() + "\\n");
        await new Promise(() => setInterval(() => {}, 60_000));
      },
    }),
  },
  edges: [],
});
`;

/** The node's start stamps so far. */
export function markTimes(marks: string): number[] {
  try {
    return readFileSync(marks, "utf8").split("\n").filter((l) => l !== "").map(Number);
  } catch {
    return [];
  }
}

/** The pid `host_claim` names for the live host. */
export function hostPid(stateDir: string): number | null {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    const row = queryOne<{ pid: number | null }>(
      store,
      "SELECT pid FROM host_claim WHERE singleton = 1 AND released_at IS NULL",
    );
    return row?.pid ?? null;
  } finally {
    closeStateStore(store);
  }
}

/** A host (started by the client) with one run whose worker sits inside node `hold`. */
export async function setUpTakeover(
  baseEnv: Record<string, string | undefined> = process.env,
  /** The `host run` command (default: this checkout from source); its workers are its own. */
  startCommand?: { command: string; args: string[] },
  /** `action`: the held node is external, so a host death leaves its effect ambiguous. */
  nodeKind: "compute" | "action" = "compute",
): Promise<TakeoverSetup> {
  const root = mkdtempSync(join(tmpdir(), "pwt-"));
  const stateDir = join(root, "s");
  shareWorkerCompileCache(stateDir);
  const project = join(root, "p");
  mkdirSync(project);
  const marks = join(root, "marks");
  writeFileSync(join(project, "hold.workflow.ts"), HOLD_WORKFLOW(marks, nodeKind));
  const env = {
    ...baseEnv,
    PI_WORKFLOWS_STATE_DIR: stateDir,
    PI_CODING_AGENT_DIR: join(root, "agent"),
    PI_WORKFLOWS_HOST_IDLE_MS: "600000",
  };
  const client = createHostClient({ env, startTimeoutMs: 60_000, startCommand });
  const cleanup = () => {
    client.close();
    return removeTempRoot(root);
  };
  try {
    const { run } = await client.call("run.start", {
      payload: {
        workflow: join(project, "hold.workflow.ts"),
        input: {},
        cwd: project,
        env: {},
        executionMode: "headless",
      },
      timeoutMs: 60_000,
    });
    await waitFor(() => markTimes(marks).length === 1, "the node to start", 60_000, 5);
    return { root, env, client, runId: run.runId, marks, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** SIGKILLs the current host and times the takeover (see the file comment). */
export async function killAndTime(setup: TakeoverSetup): Promise<TakeoverSample> {
  const stateDir = setup.env.PI_WORKFLOWS_STATE_DIR!;
  const pid = hostPid(stateDir);
  if (pid === null) throw new Error("no live host named in host_claim");
  const before = markTimes(setup.marks).length;
  const killedAt = Date.now();
  process.kill(pid, "SIGKILL");
  const status = await setup.client.call("run.status", { runId: setup.runId });
  const servingMs = Date.now() - killedAt;
  if (status.run.runId !== setup.runId) throw new Error("run.status answered another run");
  const times = await waitFor(
    () => markTimes(setup.marks).length > before && markTimes(setup.marks),
    "the node to run again",
    60_000,
    5,
  );
  const newPid = hostPid(stateDir);
  if (newPid === pid || newPid === null) throw new Error("the killed host still holds the claim");
  return { servingMs, movingMs: times[before] - killedAt };
}

export function summary(values: number[]): { median: number; min: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, min: sorted[0], max: sorted[sorted.length - 1] };
}
