/**
 * A shell node's command runs in its own process group, which the worker registers with the host
 * before it awaits the command. A SIGKILLed worker therefore cannot leave the command running:
 * the host reaps the registered group when the worker dies, and a restarted host reaps it from
 * its durable record when host and worker died together. The run then recovers as the spec says
 * (an interrupted external attempt blocks it `effectAmbiguous`). A node timeout still stops the
 * command.
 */
import { type ChildProcess, spawn } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { removeTempRoot } from "../support/temp-root.ts";
import {
  readProcessIdentityNow,
  readProcessStatNow,
  signalGroup,
} from "../../src/os/process-identity.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { readRun } from "../../src/state/queries.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { listChildGroups } from "../../src/state/transitions/child-groups.ts";
import { enqueueRun } from "../../src/state/transitions/run-enqueue.ts";
import { loadWorkflow } from "../../src/workflows/sources/load-workflow.ts";
import { normalizeWorkflowInput } from "../../src/workflows/sources/workflow-input.ts";
import { createHarness, type Harness } from "../support/supervision.ts";
import { shareWorkerCompileCache } from "../support/worker-compile-cache.ts";

const HOST_ENTRY = join(import.meta.dirname, "fixtures", "host-entry.ts");

/** A shell node whose command writes its PID (= its group) to `pidFile`, then sleeps. */
function sleeperWorkflow(pidFile: string, timeoutMs: number): string {
  return `import { defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({
  name: "sleeper",
  startAt: "s",
  nodes: {
    s: shell({
      timeoutMs: ${timeoutMs},
      exec: () => ({ command: "sh", args: ["-c", "echo $$ > ${pidFile}; exec sleep 300"] }),
    }),
  },
  edges: [],
});`;
}

/** Waits until the command wrote its PID and the host holds its group in a durable record. */
async function registeredSleeper(pidFile: string, stateDir: string): Promise<number> {
  let pid = 0;
  const registered = await waitUntil(() => {
    if (!existsSync(pidFile)) return false;
    pid = Number(readFileSync(pidFile, "utf8").trim());
    return recordedGroups(stateDir).some((line) => line.startsWith(`${pid}:`));
    // A host process, its worker and the command all start first: seconds on a loaded machine.
  }, 30_000);
  expect(registered, "the command's group was registered with the host").toBe(true);
  return pid;
}

/** `pid:starttime` of every group the host holds in `worker_child_groups` (read-only open). */
function recordedGroups(stateDir: string): string[] {
  if (!existsSync(join(stateDir, "state.sqlite"))) return [];
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    return listChildGroups(store).map((g) => `${g.pid}:${g.startTime}`);
  } finally {
    closeStateStore(store);
  }
}

const sleepers: number[] = [];
/** Only if the code under test failed to stop it: by exact identity, never a reused PID. */
function killLeftovers(): void {
  for (const pid of sleepers.splice(0)) {
    const identity = readProcessIdentityNow(pid);
    if (identity) void signalGroup(identity, "SIGKILL");
  }
}

describe("shell command groups under host supervision", () => {
  let h: Harness | undefined;
  afterEach(async () => {
    killLeftovers();
    await h?.close();
    h = undefined;
  });

  it("a SIGKILLed worker's command group is reaped and the run blocks effectAmbiguous", async () => {
    h = await createHarness();
    const pidFile = join(h.root, "sleeper.pid");
    const runId = await h.startRun(
      h.writeWorkflow("sleeper.workflow.ts", sleeperWorkflow(pidFile, 60_000)),
    );
    const sleeper = await registeredSleeper(pidFile, h.stateDir);
    sleepers.push(sleeper);
    const worker = readProcessStatNow(sleeper)!.ppid;
    expect(readProcessStatNow(worker)?.pgrp).toBe(worker); // the worker leads its own group
    expect(readProcessStatNow(sleeper)?.pgrp).toBe(sleeper); // and the command another one
    process.kill(worker, "SIGKILL");

    expect(await waitUntil(() => readProcessIdentityNow(sleeper) === null, 10_000)).toBe(true);
    const run = await h.waitForRun(runId, (r) => r.blockedReason !== null);
    expect([run.state, run.queueState, run.blockedReason]).toEqual([
      "running",
      "parked",
      "effectAmbiguous",
    ]);
    await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 10_000);
    expect(recordedGroups(h.stateDir)).toEqual([]);
    expect(h.invariants()).toEqual([]);
  });

  it("commands that end before the host checks them still succeed", async () => {
    h = await createHarness();
    const count = 30;
    const nodes = Array.from(
      { length: count },
      (_, i) => `    s${i}: shell({ exec: () => ({ command: "true" }), parse: () => ${i} }),`,
    ).join("\n");
    const edges = Array.from({ length: count - 1 }, (_, i) => `{ from: "s${i}", to: "s${i + 1}" }`)
      .join(", ");
    const runId = await h.startRun(h.writeWorkflow(
      "fast.workflow.ts",
      `import { defineWorkflow, shell } from "pi-workflows";
export default defineWorkflow({
  name: "fast",
  startAt: "s0",
  nodes: {
${nodes}
  },
  edges: [${edges}],
});`,
    ));
    const run = await h.waitForRun(runId, (r) => r.state !== "running" && r.state !== "queued");
    expect([run.state, run.output]).toEqual(["completed", count - 1]);
    await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 10_000);
    expect(recordedGroups(h.stateDir)).toEqual([]);
  });

  it("a node timeout still stops the command, and the group is unregistered", async () => {
    h = await createHarness();
    const pidFile = join(h.root, "sleeper.pid");
    // The timeout leaves room to see the registration first: under the `ps` backend the
    // worker's read of the command's identity and the host's check are one `ps` run each, which
    // take up to a second apiece on a loaded machine.
    const runId = await h.startRun(
      h.writeWorkflow("sleeper.workflow.ts", sleeperWorkflow(pidFile, 4_000)),
    );
    const sleeper = await registeredSleeper(pidFile, h.stateDir);
    sleepers.push(sleeper);
    const run = await h.waitForRun(runId, (r) => r.state === "timed_out");
    expect(run.error).toMatchObject({ code: "nodeTimedOut" });
    expect(readProcessIdentityNow(sleeper)).toBe(null);
    await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 10_000);
    expect(recordedGroups(h.stateDir)).toEqual([]);
    expect(h.invariants()).toEqual([]);
  });
});

describe("a restarted host reaps a registered group when host and worker died together", () => {
  const root = realpathSync(mkdtempSync(join(tmpdir(), "piw-groups-")));
  const hosts: ChildProcess[] = [];
  afterAll(async () => {
    for (const host of hosts) if (host.exitCode === null) host.kill("SIGKILL");
    killLeftovers();
    await removeTempRoot(root);
  });

  const startHost = (stateDir: string) => {
    const host = spawn(process.execPath, [HOST_ENTRY, stateDir], {
      env: { ...process.env, PI_CODING_AGENT_DIR: join(root, "agent") },
      stdio: "ignore",
    });
    hosts.push(host);
    const exited = new Promise<number | null>((resolve) => host.once("exit", resolve));
    return { host, exited };
  };

  it("reaps exactly the recorded identity at recovery", async () => {
    const stateDir = join(root, "state");
    shareWorkerCompileCache(stateDir);
    const project = join(root, "project");
    mkdirSync(project, { recursive: true });
    const pidFile = join(root, "sleeper.pid");
    const path = join(project, "sleeper.workflow.ts");
    writeFileSync(path, sleeperWorkflow(pidFile, 60_000));
    const loaded = await loadWorkflow(path, { cwd: project });
    const { input, inputHash } = normalizeWorkflowInput(loaded.workflow, {});
    const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
    const { runId } = enqueueRun(store, {
      workflowName: "sleeper",
      workflowRef: path,
      projectPath: project,
      workflowSource: loaded.identity.workflowSource as never,
      definitionDigest: loaded.identity.definitionDigest,
      input,
      inputHash,
      binding: { executionMode: "headless" },
    });
    closeStateStore(store);

    const first = startHost(stateDir);
    const sleeper = await registeredSleeper(pidFile, stateDir);
    sleepers.push(sleeper);
    const worker = readProcessStatNow(sleeper)!.ppid;
    // Freeze the worker so it cannot notice the host's death and stop its command itself.
    process.kill(worker, "SIGSTOP");
    first.host.kill("SIGKILL");
    await first.exited;
    process.kill(worker, "SIGKILL");
    expect(await waitUntil(() => readProcessIdentityNow(worker) === null, 5_000)).toBe(true);
    expect(readProcessIdentityNow(sleeper), "the command outlived host and worker").not.toBe(null);

    const second = startHost(stateDir);
    const code = await Promise.race([
      second.exited,
      new Promise<string>((resolve) => setTimeout(() => resolve("no exit"), 30_000)),
    ]);
    expect(code).toBe(0);
    expect(readProcessIdentityNow(sleeper)).toBe(null);
    expect(recordedGroups(stateDir)).toEqual([]);
    const check = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
    try {
      const run = readRun(check, runId)!;
      expect([run.state, run.queueState, run.blockedReason]).toEqual([
        "running",
        "parked",
        "effectAmbiguous",
      ]);
      expect(checkInvariants(check)).toEqual([]);
    } finally {
      closeStateStore(check);
    }
  });
});
