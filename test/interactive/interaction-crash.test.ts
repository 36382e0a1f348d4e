/**
 * Crashes at the durable boundaries of interactive steps, with real host, worker and validation
 * processes (SIGKILL by PID) and socket clients as the extension: the validation child dies
 * during validation; the host dies while a request is pending, during a validation, and while a
 * deadline passes. Nothing is lost, nothing is presented twice, the invariants hold.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { type CliProcess, killAll, startHostProcess, tempHome, waitFor } from "../host/helpers.ts";
import { SessionClient } from "../host/interactive-session.ts";
import { rows, runRow, violations, writeProject } from "./fixtures.ts";

const homes: ReturnType<typeof tempHome>[] = [];
const clients: SessionClient[] = [];
/** Gates of blocked validation children: opened after each test so none outlives a failure. */
const gates: string[] = [];

afterEach(async () => {
  for (const gate of gates.splice(0)) writeFileSync(gate, "open");
  for (const client of clients.splice(0)) client.close();
  await killAll();
});
afterAll(() => {
  for (const home of homes) home.cleanup();
});

/** A host whose lease a successor can take over soon after a SIGKILL. */
function crashHome() {
  const home = tempHome({
    PI_WORKFLOWS_HOST_CLAIM_TTL_MS: "1500",
    PI_WORKFLOWS_HOST_RENEW_MS: "400",
    PI_WORKFLOWS_HOST_IDLE_MS: "600000",
  });
  homes.push(home);
  return { home, project: writeProject(home.root) };
}

async function open(home: ReturnType<typeof tempHome>, sessionId: string) {
  const client = await SessionClient.open(home.socketPath, sessionId);
  clients.push(client);
  return client;
}

async function startRun(session: SessionClient, project: string, input: unknown) {
  const answer = await session.start("routed", project, input);
  if (answer.outcome !== "accepted") throw new Error(JSON.stringify(answer));
  return (answer.receipt as { run: { runId: string } }).run.runId;
}

/** A new host once the killed one's lease has lapsed (`host run` refuses while it is live). */
async function restartHost(env: NodeJS.ProcessEnv): Promise<CliProcess> {
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
async function kill(proc: CliProcess): Promise<void> {
  proc.kill("SIGKILL");
  await proc.exited;
}

/** The host's `worker --validate` child, found through /proc (its parent is the host). */
function validationChild(hostPid: number): number | null {
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

function processExists(pid: number): boolean {
  try {
    // A zombie has been stopped; only the host's wait reaps it.
    return !readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.startsWith("Z");
  } catch {
    return false;
  }
}

function finished(stateDir: string, runId: string) {
  return waitFor(
    () => {
      const row = runRow(stateDir, runId);
      return ["completed", "failed", "timed_out", "cancelled"].includes(row.state) && row;
    },
    `run ${runId} to end`,
    40_000,
  );
}

describe("interactive steps survive crashes", () => {
  it("a validation child SIGKILLed mid-validation rejects the provisional submission", async () => {
    const { home, project } = crashHome();
    const host = await startHostProcess(home.env);
    const session = await open(home, "s-kill-child");
    const gate = join(home.root, "gate");
    const runId = await startRun(session, project, { gate });
    const step = await session.nextStep();
    const pending = session.submit(step, { slow: true, n: 1 }, {
      toolCallId: "t1",
      waitMs: 25_000,
    });
    const child = (await waitFor(() => validationChild(host.pid), "the validation child"))!;
    process.kill(child, "SIGKILL");
    const answer = await pending;
    expect(answer.receipt).toMatchObject({
      status: "rejected",
      error: { code: "validationFailed" },
    });
    expect((answer.receipt as { message: string }).message).toContain("submit it again");
    // The request is ready for a corrected retry, and the same tool call keeps its receipt.
    expect((await session.claim()).interaction).toMatchObject({
      interactionId: step.interactionId,
      submission: { status: "rejected", error: { code: "validationFailed" } },
    });
    expect(await session.submit(step, { slow: true, n: 1 }, { toolCallId: "t1" })).toMatchObject({
      outcome: "adopted",
      receipt: { status: "rejected" },
    });
    expect((await session.submit(step, { n: 2 })).receipt).toMatchObject({ status: "accepted" });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("a cancel during a validation stops the validation child", async () => {
    const { home, project } = crashHome();
    const host = await startHostProcess(home.env);
    const session = await open(home, "s-cancel-validating");
    const runId = await startRun(session, project, { gate: join(home.root, "never") });
    const step = await session.nextStep();
    const pending = session.submit(step, { slow: true, n: 1 }, { waitMs: 25_000 });
    const child = (await waitFor(() => validationChild(host.pid), "the validation child"))!;
    const t0 = Date.now();
    const cancel = await session.request("run.cancel", { runId, payload: {} });
    expect(cancel.outcome).toBe("accepted");
    // The cancel answers once the child is gone (the group's kill grace bounds it).
    expect(processExists(child)).toBe(false);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect((await pending).receipt).toMatchObject({ status: "rejected" });
    expect(runRow(home.stateDir, runId)).toMatchObject({ state: "cancelled" });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("the host SIGKILLed while a request is pending: the next host keeps it, presented once", async () => {
    const { home, project } = crashHome();
    const first = await startHostProcess(home.env);
    let session = await open(home, "s-kill-host");
    const runId = await startRun(session, project, {});
    const step = await session.nextStep();
    expect((await session.present(step, "entry-1")).outcome).toBe("accepted");
    await kill(first);
    session.close();

    await restartHost(home.env);
    session = await open(home, "s-kill-host");
    const again = await session.nextStep();
    expect(again).toMatchObject({
      interactionId: step.interactionId,
      presentation: { sessionEntryId: "entry-1" },
    });
    expect(again.contract).toEqual(step.contract);
    expect((await session.submit(again, { n: 5 })).receipt).toMatchObject({ status: "accepted" });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    const waits = rows(
      home.stateDir,
      "SELECT seq FROM events WHERE run_id = :runId AND type = 'run.waiting'",
      { runId },
    );
    expect(waits).toHaveLength(1);
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("the host SIGKILLed during a validation: the next host validates it again (step 9)", async () => {
    const { home, project } = crashHome();
    const first = await startHostProcess(home.env);
    let session = await open(home, "s-kill-validating");
    const gate = join(home.root, "gate");
    const runId = await startRun(session, project, { gate });
    const step = await session.nextStep();
    const answer = await session.submit(step, { slow: true, n: 3 }, {
      toolCallId: "t-slow",
      waitMs: 200,
    });
    expect(answer.receipt).toMatchObject({ status: "validating" });
    await kill(first);
    session.close();
    writeFileSync(gate, "open");

    await restartHost(home.env);
    session = await open(home, "s-kill-validating");
    // The extension sends the same tool call again: it waits for the new child's verdict.
    const verdict = await session.submit(step, { slow: true, n: 3 }, { toolCallId: "t-slow" });
    expect(verdict).toMatchObject({ outcome: "adopted", receipt: { status: "accepted" } });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({ got: { n: 3 } });
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("the host SIGKILLed while a validation child is stuck: the next host reaps it", async () => {
    const { home, project } = crashHome();
    const first = await startHostProcess(home.env);
    let session = await open(home, "s-stuck-child");
    const gate = join(home.root, "gate");
    gates.push(gate);
    const runId = await startRun(session, project, { gate });
    const step = await session.nextStep();
    const answer = await session.submit(step, { block: true, n: 4 }, {
      toolCallId: "t-block",
      waitMs: 200,
    });
    expect(answer.receipt).toMatchObject({ status: "validating" });
    const child = (await waitFor(() => validationChild(first.pid), "the validation child"))!;
    await waitFor(() => existsSync(`${gate}.blocked`), "the child to block in validate");
    // The host names it durably while it lives.
    const named = () => rows(home.stateDir, "SELECT pid, kind, run_id FROM host_children");
    await waitFor(() => named().length === 1, "the child's host_children row");
    expect(named()).toEqual([{ pid: child, kind: "validator", run_id: runId }]);
    await kill(first);
    session.close();
    // Its event loop is blocked: it cannot see its channel close and stays.
    expect(processExists(child)).toBe(true);

    const second = await restartHost(home.env);
    await waitFor(() => !processExists(child), "the stale validation child to be reaped", 15_000);
    await second.waitForStderr("recovery.reaped_host_children count=1");
    // Step 9 validates the submission again in a new child, which the gate lets through.
    const fresh = (await waitFor(() => validationChild(second.pid), "a new validation child"))!;
    expect(fresh).not.toBe(child);
    expect(named()).toEqual([{ pid: fresh, kind: "validator", run_id: runId }]);
    writeFileSync(gate, "open");
    session = await open(home, "s-stuck-child");
    const verdict = await session.submit(step, { block: true, n: 4 }, { toolCallId: "t-block" });
    expect(verdict).toMatchObject({ outcome: "adopted", receipt: { status: "accepted" } });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    await waitFor(() => named().length === 0, "the registry row to go with the child");
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("a deadline that passed while no host ran is applied first at start-up (step 8)", async () => {
    const { home, project } = crashHome();
    const first = await startHostProcess(home.env);
    const session = await open(home, "s-deadline");
    const runId = await startRun(session, project, { timeoutMs: 2_500 });
    const step = await session.nextStep();
    await kill(first);
    session.close();
    await waitFor(() => Date.now() > step.contract.deadlineAt! + 200, "the deadline", 10_000);

    await restartHost(home.env);
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    expect(JSON.parse(runRow(home.stateDir, runId).output_json!)).toEqual({
      outcome: "timed_out",
      code: "nodeTimedOut",
    });
    expect(violations(home.stateDir)).toEqual([]);
  });
});
