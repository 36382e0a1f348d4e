/**
 * What the interactive crash tests share: homes for hosts that are SIGKILLed,
 * session clients standing in for the extension, host restarts, and process lookups through
 * /proc and `host_children`. Every host, client and blocked child is cleaned up after each test.
 */
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { afterAll, afterEach } from "vitest";
import { type CliProcess, killAll, startHostProcess, tempHome, waitFor } from "../support/host.ts";
import { SessionClient } from "../support/interactive-session.ts";
import { rows, runRow, writeProject } from "../support/interactive-fixtures.ts";

type Home = ReturnType<typeof tempHome>;

const homes: Home[] = [];
const clients: SessionClient[] = [];
/** Gates of blocked validations: opened after each test so no child outlives a failure. */
export const gates: string[] = [];

afterEach(async () => {
  for (const gate of gates.splice(0)) writeFileSync(gate, "open");
  for (const client of clients.splice(0)) client.close();
  await killAll();
});
afterAll(async () => {
  for (const home of homes) await home.cleanup();
});

/**
 * A home for hosts that are SIGKILLed. Their lease is the default one (15 s): a successor takes
 * over at once from a holder whose recorded process is gone (state/host-claim.ts), and a lease
 * short enough to lapse in a busy host's pause (1.5 s, renewed every 0.4 s) ended the successor
 * itself at load 14 (`host.claimLost reason=expired`) with the run left unfinished. `env` adds
 * settings (e.g. `PI_WORKFLOWS_MAX_PREPARED=0`: every validation in a fresh `worker --validate`
 * child).
 */
export function crashHome(env: Record<string, string> = {}) {
  const home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "600000", ...env });
  homes.push(home);
  return { home, project: writeProject(home.root) };
}

export async function open(home: Home, sessionId: string): Promise<SessionClient> {
  const client = await SessionClient.open(home.socketPath, sessionId);
  clients.push(client);
  return client;
}

export async function startRun(
  session: SessionClient,
  project: string,
  input: unknown,
  workflow = "routed",
) {
  const answer = await session.start(workflow, project, input);
  if (answer.outcome !== "accepted") throw new Error(JSON.stringify(answer));
  return (answer.receipt as { run: { runId: string } }).run.runId;
}

/**
 * A new host after a SIGKILL: at once, its predecessor being gone; retried while `host run`
 * refuses (a predecessor whose process the start-up could not prove gone keeps its lease).
 */
export async function restartHost(env: NodeJS.ProcessEnv): Promise<CliProcess> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await startHostProcess(env);
    } catch (error) {
      if (!/already running/.test(String(error)) || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
}

/** SIGKILL and wait for the exit. */
export async function kill(proc: CliProcess): Promise<void> {
  proc.kill("SIGKILL");
  await proc.exited;
}

/** The host's `worker --validate` child, found through /proc (its parent is the host). */
export function validationChild(hostPid: number): number | null {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== hostPid) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (cmdline.includes("--validate")) return Number(entry);
    } catch {
      // The process ended meanwhile.
    }
  }
  return null;
}

export function processExists(pid: number): boolean {
  try {
    // A zombie has been stopped; only the host's wait reaps it.
    return !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z");
  } catch {
    return false;
  }
}

/** The host's validation children and prepared processes, as `host_children` names them. */
export function hostChildren(stateDir: string) {
  return rows<{ pid: number; kind: string; run_id: string | null }>(
    stateDir,
    "SELECT pid, kind, run_id FROM host_children",
  );
}

export function finished(stateDir: string, runId: string) {
  return waitFor(
    () => {
      const row = runRow(stateDir, runId);
      return ["completed", "failed", "timed_out", "cancelled"].includes(row.state) && row;
    },
    `run ${runId} to end`,
    40_000,
  );
}

/** The run's worker epochs in order: process, generation and how each ended. */
export function workerEpochs(stateDir: string, runId: string) {
  return rows<{ pid: number; generation: number; status: string }>(
    stateDir,
    "SELECT pid, generation, status FROM run_workers WHERE run_id = :runId ORDER BY started_at, " +
      "generation",
    { runId },
  );
}
