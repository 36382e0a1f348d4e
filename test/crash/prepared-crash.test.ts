/**
 * The run's prepared process (host prepared-children.ts): the worker whose epoch parked on an
 * interactive request validates the run's submission and runs its next epoch, with no process
 * start. Real host and processes, socket clients as the extension, SIGKILL by PID at the new
 * boundaries: while it waits, mid-validation, as it takes the next epoch; a cancel while it
 * waits. A prepared process that dies never commits anything; fresh children take over.
 */
import { join } from "node:path";
import { appendFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { sha256Hex } from "../../src/protocol/canonical-json.ts";
import { describe, expect, it } from "vitest";
import { inPsPass } from "../support/ps-pass.ts";
import { runEnvironment } from "../../src/base/env-names.ts";
import { MAX_LOADS_ENV } from "../../src/worker/prepared-child.ts";
import { startHostProcess, waitFor } from "../support/host.ts";
import { rows, violations } from "../support/interactive-fixtures.ts";
import {
  crashHome,
  finished,
  gates,
  hostChildren,
  open,
  processExists,
  restartHost,
  startRun,
  validationChild,
  workerEpochs,
} from "./interaction-crash-helpers.ts";

/** The stripped texts saved in the state directory's compile cache (stripped-sources.ts). */
function savedStripped(stateDir: string): string[] {
  const cache = join(stateDir, "compile-cache");
  return readdirSync(cache).flatMap((version) => {
    try {
      return readdirSync(join(cache, version, "piw-stripped"));
    } catch {
      return [];
    }
  });
}

/** The prepared process of `runId` once its row is there (its last worker's pid). */
async function preparedOf(stateDir: string, runId: string): Promise<number> {
  const row = await waitFor(
    () => hostChildren(stateDir).find((c) => c.run_id === runId && c.kind === "validator"),
    "the run's prepared process",
  );
  return row!.pid;
}

describe("the run's prepared process", () => {
  it("validates and runs the next epoch; killed while waiting or mid-validation, fresh children take over", async () => {
    const { home, project } = crashHome();
    const host = await startHostProcess(home.env);

    // 1. No process start: the same process runs both epochs and the validation between.
    let session = await open(home, "s-reuse");
    const reused = await startRun(session, project, {});
    const step = await session.nextStep();
    const kept = await preparedOf(home.stateDir, reused);
    expect(workerEpochs(home.stateDir, reused)).toEqual([
      { pid: kept, generation: 1, status: "exited" },
    ]);
    expect((await session.submit(step, { n: 1 })).receipt).toMatchObject({ status: "accepted" });
    expect(await finished(home.stateDir, reused)).toMatchObject({ state: "completed" });
    const epochs = await settledEpochs(home.stateDir, reused);
    expect(epochs.map((e) => [e.pid, e.generation])).toEqual([[kept, 1], [kept, 2]]);
    expect(validationChild(host.pid)).toBeNull();
    await waitFor(() => !processExists(kept), "the process to exit after the run's end");

    // 1b. Module state does not cross generations: each generation and each validation runs in
    // a module instance of its own (the workflow counts its evaluations), all in the one process.
    session = await open(home, "s-counted");
    const counted = await startRun(session, project, {}, "counted");
    const first = await session.nextStep();
    const countedPid = await preparedOf(home.stateDir, counted);
    const seen: Seen[] = [promptSaw(first)];
    const again = await session.submit(first, { again: true });
    expect(again.receipt).toMatchObject({ status: "rejected" });
    const rejection = (again.receipt as { error: { message: string } }).error.message;
    seen.push(JSON.parse(/again (\{.*?\})/.exec(rejection)![1]));
    expect((await session.submit(first, { n: 1 })).receipt).toMatchObject({ status: "accepted" });
    const second = await session.nextStep((s) => s.contract.step === "second");
    const secondPrompt = promptSaw(second);
    expect((await session.submit(second, { n: 2 })).receipt).toMatchObject({ status: "accepted" });
    const countedRun = await finished(home.stateDir, counted);
    expect(countedRun).toMatchObject({ state: "completed" });
    const output = JSON.parse(countedRun.output_json!) as Record<string, Seen>;
    // prompt 1, rejected and accepted validations, prompt 2, its validation, the last node
    seen.push(output.first, secondPrompt, output.second, output.done);
    expect(seen.map((s) => [s.calls, s.pid])).toEqual(seen.map(() => [1, countedPid]));
    const evaluations = seen.map((s) => s.evaluation);
    expect(evaluations).toEqual([...new Set(evaluations)].sort((a, b) => a - b));
    // Each instance served the stripped text the resolver saved (stripped-sources.ts), so the
    // process never stripped the file again.
    const file = join(project, ".pi", "workflows", "counted.workflow.ts");
    expect(savedStripped(home.stateDir)).toContain(`${sha256Hex(readFileSync(file))}.js`);
    expect(validationChild(host.pid)).toBeNull();

    // 1c. Past its loads (the cap lowered to 2 for this run: the validation and the next epoch
    // take both) the process asks not to be kept: the host retires it and the run goes on in
    // fresh processes (a validation child, then a new worker).
    session = await open(home, "s-retired");
    const retiredStart = await session.request("run.start", {
      payload: {
        workflow: "counted",
        cwd: project,
        input: {},
        executionMode: "interactive",
        originSessionId: "s-retired",
        env: runEnvironment(home.env, { [MAX_LOADS_ENV]: "2" }),
      },
    });
    const retired = (retiredStart.receipt as { run: { runId: string } }).run.runId;
    const retiredFirst = await session.nextStep();
    const retiredPid = await preparedOf(home.stateDir, retired);
    expect((await session.submit(retiredFirst, { n: 1 })).receipt).toMatchObject({
      status: "accepted",
    });
    const retiredSecond = await session.nextStep((s) => s.contract.step === "second");
    expect(promptSaw(retiredSecond).pid).toBe(retiredPid);
    await waitFor(() => !processExists(retiredPid), "the spent process to exit");
    await waitFor(
      () => hostChildren(home.stateDir).every((c) => c.run_id !== retired),
      "the spent process forgotten",
    );
    expect((await session.submit(retiredSecond, { n: 2 })).receipt).toMatchObject({
      status: "accepted",
    });
    const retiredRun = await finished(home.stateDir, retired);
    expect(retiredRun).toMatchObject({ state: "completed" });
    const retiredOut = JSON.parse(retiredRun.output_json!) as Record<string, Seen>;
    expect(retiredOut.second.pid).not.toBe(retiredPid);
    expect(retiredOut.done.pid).not.toBe(retiredPid);
    const retiredEpochs = await settledEpochs(home.stateDir, retired);
    expect(retiredEpochs.map((e) => e.pid === retiredPid)).toEqual([true, true, false]);
    expect(retiredEpochs.map((e) => e.status)).toEqual(["exited", "exited", "exited"]);

    // 2. SIGKILLed while it waits: the submission is validated in a fresh child.
    session = await open(home, "s-idle-kill");
    const idle = await startRun(session, project, {});
    const idleStep = await session.nextStep();
    const idlePid = await preparedOf(home.stateDir, idle);
    process.kill(idlePid, "SIGKILL");
    await waitFor(() => hostChildren(home.stateDir).length === 0, "the dead process forgotten");
    expect((await session.submit(idleStep, { n: 2 })).receipt).toMatchObject({
      status: "accepted",
    });
    expect(await finished(home.stateDir, idle)).toMatchObject({ state: "completed" });
    const idleEpochs = workerEpochs(home.stateDir, idle);
    expect(idleEpochs).toHaveLength(2);
    expect(idleEpochs[1].pid).not.toBe(idlePid);

    // 3. SIGKILLed mid-validation: rejected (submit again), the retry is accepted elsewhere.
    session = await open(home, "s-busy-kill");
    const gate = join(home.root, "gate-busy");
    gates.push(gate);
    const busy = await startRun(session, project, { gate });
    const busyStep = await session.nextStep();
    const busyPid = await preparedOf(home.stateDir, busy);
    const pending = session.submit(busyStep, { slow: true, n: 3 }, { waitMs: 25_000 });
    await waitFor(() => validatingCount(home.stateDir) === 1, "the submission to be validating");
    // It runs in the prepared process, not in a fresh child.
    expect(validationChild(host.pid)).toBeNull();
    process.kill(busyPid, "SIGKILL");
    expect((await pending).receipt).toMatchObject({
      status: "rejected",
      error: { code: "validationFailed" },
    });
    writeFileSync(gate, "open");
    expect((await session.submit(busyStep, { n: 4 })).receipt).toMatchObject({
      status: "accepted",
    });
    expect(await finished(home.stateDir, busy)).toMatchObject({ state: "completed" });

    // 4. A cancel while it waits stops it before the cancel answers.
    session = await open(home, "s-cancel");
    const cancelled = await startRun(session, project, {});
    await session.nextStep();
    const cancelPid = await preparedOf(home.stateDir, cancelled);
    const cancel = await session.request("run.cancel", { runId: cancelled, payload: {} });
    expect(cancel.outcome).toBe("accepted");
    expect(processExists(cancelPid)).toBe(false);
    expect(hostChildren(home.stateDir)).toEqual([]);
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("SIGKILLed as it takes the next epoch: the run is relaunched in a fresh worker", async () => {
    const { home, project } = crashHome({
      PI_WORKFLOWS_CRASH_AT: "worker.prepared.launched",
    });
    const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
    await startHostProcess(env);
    const session = await open(home, "s-launch-kill");
    const runId = await startRun(session, project, {});
    const step = await session.nextStep();
    const kept = await preparedOf(home.stateDir, runId);
    expect((await session.submit(step, { n: 5 })).receipt).toMatchObject({ status: "accepted" });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    const epochs = await settledEpochs(home.stateDir, runId);
    // The prepared process crashed in its new epoch (before worker.ready); a new one ran it.
    expect(epochs.map((e) => e.status)).toEqual(["exited", "crashed", "exited"]);
    expect(epochs[1].pid).toBe(kept);
    expect(epochs[2].pid).not.toBe(kept);
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("a model step's start and request, sent back to back", () => {
  // Killed after sending the start only (the request never leaves); after sending both (the host
  // commits what it reads from the dead worker's pipe); at the start's reply, which comes only
  // after the request was sent too. Either way no request is durable without its attempt's
  // deadline, the step is presented once and the run completes.
  const points = [
    "worker.node.started.afterSend",
    "worker.interaction.requested.afterSend",
    "worker.node.started.afterReply",
  ];
  // The ps pass kills at the first point only: the three are the same worker SIGKILL and the same
  // reaping (the process-table reads); they vary only what was committed (see ps-pass.ts).
  for (const point of inPsPass ? points.slice(0, 1) : points) {
    it(`SIGKILLed at ${point}: the run goes on, every request has its deadline`, async () => {
      const { home, project } = crashHome({ PI_WORKFLOWS_CRASH_AT: point });
      const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
      await startHostProcess(env);
      const session = await open(home, "s-pair");
      const runId = await startRun(session, project, {});
      const step = await session.nextStep();
      expect((await session.submit(step, { n: 3 })).receipt).toMatchObject({ status: "accepted" });
      expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
      const requests = rows<{ deadline: number | null; started: number | null }>(
        home.stateDir,
        "SELECT json_extract(r.contract_json, '$.deadlineAt') AS deadline, a.deadline_at AS " +
          "started FROM interactive_requests r JOIN node_attempts a USING (attempt_id) " +
          "WHERE r.run_id = :runId",
        { runId },
      );
      expect(requests).toHaveLength(1);
      expect(requests[0].started).not.toBeNull();
      expect(requests[0].deadline).toBe(requests[0].started);
      const attempts = rows<{ node_id: string; state: string }>(
        home.stateDir,
        "SELECT node_id, state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
        { runId },
      ).map((a) => `${a.node_id}:${a.state}`);
      // Killed before the request left: that start is interrupted and the step starts again.
      // Killed right after both left: the host commits the request if it reads it before the
      // dead worker's channel fails; if the channel fails first (seen once in a loaded CI run),
      // the request goes with it and that start is interrupted like the first. Either way
      // nothing durable is lost and the step is presented once.
      const interrupted = ["ask:interrupted", "ask:ok", "done:ok"];
      if (point === "worker.node.started.afterSend") expect(attempts).toEqual(interrupted);
      else if (point === "worker.interaction.requested.afterSend") {
        expect([interrupted, ["ask:ok", "done:ok"]]).toContainEqual(attempts);
      } else expect(attempts).toEqual(["ask:ok", "done:ok"]);
      expect(violations(home.stateDir)).toEqual([]);
    });
  }
});

describe("the verdict and the next epoch in one commit", () => {
  // The run's prepared process validates a submission before it is recorded (held-submission.ts):
  // the submission, the acceptance, the next epoch's claim and its `worker.live` share one commit.
  // The host SIGKILLed as the validate request left (`host.submission.validationSent`), inside
  // that commit (`host.heldSubmission.written`, the submission written; for "counted" also
  // `host.aheadStart.applied`, the next model step's start and request proposed ahead by the
  // prepared process, speculative-start.ts): nothing of the submission is durable, and the
  // extension's resent tool call is a new submission, accepted once. Right after the commit
  // (`host.acceptedLaunch.afterCommit`) the run is running with a live epoch in the dead host's
  // prepared process (for "counted" waiting on the second step's request): the next host reaps it
  // and a new worker goes on from the accepted step; the resent call adopts the verdict. A
  // submission whose verdict is late is recorded `validating` on its own
  // (`host.heldSubmission.recorded`, a gated validation): the next host validates it again
  // (recovery step 9) and the resent call adopts that verdict. Either way the step is accepted
  // once and every node runs once.
  const cases = [
    { point: "host.submission.validationSent", workflow: "routed" },
    { point: "host.heldSubmission.written", workflow: "routed" },
    { point: "host.aheadStart.applied", workflow: "counted" },
    { point: "host.heldSubmission.recorded", workflow: "routed" },
    { point: "host.acceptedLaunch.afterCommit", workflow: "routed" },
    { point: "host.acceptedLaunch.afterCommit", workflow: "counted" },
  ];
  // The ps pass runs the last case only: each is the same host SIGKILL and the next host's reaping
  // of the dead host's prepared process; they vary only what was committed (see ps-pass.ts).
  for (const { point, workflow } of inPsPass ? cases.slice(-1) : cases) {
    it(`the host SIGKILLed at ${point} (${workflow}): the run completes, nothing runs twice`, async () => {
      const { home, project } = crashHome({ PI_WORKFLOWS_CRASH_AT: point });
      const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
      const first = await startHostProcess(env);
      let session = await open(home, "s-accepted-launch");
      const late = point === "host.heldSubmission.recorded";
      const gate = join(home.root, "gate-late");
      if (late) gates.push(gate);
      const runId = await startRun(session, project, late ? { gate } : {}, workflow);
      const step = await session.nextStep();
      const kept = await preparedOf(home.stateDir, runId);
      const output = late ? { slow: true, n: 6 } : { n: 6 };
      // The submit carries its step's entry: recorded with the submission, never without it.
      const presentation = { sessionEntryId: "entry-launch" };
      // The answer is lost with the host.
      await session.submit(step, output, { toolCallId: "t-launch", presentation })
        .catch(() => null);
      await first.exited;
      session.close();
      await waitFor(() => !processExists(kept), "the prepared process to leave with its host");
      const submissions = rows<{ outcome: string }>(
        home.stateDir,
        "SELECT outcome FROM interactive_submissions",
      );
      const durable = late || point.endsWith("afterCommit");
      expect(submissions).toEqual(
        durable ? [{ outcome: late ? "validating" : "accepted" }] : [],
      );
      const entries = rows(
        home.stateDir,
        "SELECT presentation_entry_id AS entry FROM interactive_requests WHERE run_id = :runId " +
          "AND presentation_entry_id IS NOT NULL",
        { runId },
      );
      expect(entries).toEqual(durable ? [{ entry: "entry-launch" }] : []);
      if (late) writeFileSync(gate, "open");

      await restartHost(env);
      session = await open(home, "s-accepted-launch");
      // The extension sends the same tool call again: the stored or the new verdict answers.
      const verdict = await session.submit(step, output, {
        toolCallId: "t-launch",
        presentation,
      });
      expect(verdict).toMatchObject({
        outcome: durable ? "adopted" : "accepted",
        receipt: { status: "accepted" },
      });
      if (workflow === "counted") {
        const second = await session.nextStep((s) => s.contract.step === "second");
        expect((await session.submit(second, { n: 7 })).receipt).toMatchObject({
          status: "accepted",
        });
      }
      expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
      const attempts = rows<{ node_id: string; state: string }>(
        home.stateDir,
        "SELECT node_id, state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
        { runId },
      ).map((a) => `${a.node_id}:${a.state}`);
      expect(attempts).toEqual(
        workflow === "counted" ? ["first:ok", "second:ok", "done:ok"] : ["ask:ok", "done:ok"],
      );
      const requests = rows<{ node_id: string }>(
        home.stateDir,
        "SELECT node_id FROM interactive_requests WHERE run_id = :runId ORDER BY created_at",
        { runId },
      ).map((r) => r.node_id);
      expect(requests).toEqual(workflow === "counted" ? ["first", "second"] : ["ask"]);
      const accepted = rows(
        home.stateDir,
        "SELECT seq FROM events WHERE run_id = :runId AND type = 'interaction.accepted'",
        { runId },
      );
      expect(accepted).toHaveLength(workflow === "counted" ? 2 : 1);
      const epochs = await settledEpochs(home.stateDir, runId);
      // After the commit the dead host's epoch of generation 2 was live in the kept process
      // (its first step committed with it for "counted"); the next host reaped it and ran the
      // rest in a new worker. Before it, the next host validated (again) and launched anew.
      const after = point.endsWith("afterCommit");
      expect(epochs.map((e) => e.pid === kept)).toEqual(
        after ? [true, true, false] : [true, false, false].slice(0, epochs.length),
      );
      if (after) expect(epochs[1].generation).toBe(2);
      expect(violations(home.stateDir)).toEqual([]);
    });
  }
});

describe("the prepared process SIGKILLed right after its verdict with the next step ahead", () => {
  // The host commits what it reads from the dead process's pipe (the acceptance with the next
  // epoch's start and request) or, when the channel fails first, rejects the submission for a
  // retry. Either way the second step is requested and presented once, its submission goes to
  // fresh processes, and every node runs once.
  it("the run completes, each step requested once", async () => {
    const { home, project } = crashHome({
      PI_WORKFLOWS_CRASH_AT: "worker.interaction.accepted.afterSend",
    });
    const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
    await startHostProcess(env);
    const session = await open(home, "s-ahead-kill");
    const runId = await startRun(session, project, {}, "counted");
    const first = await session.nextStep();
    const kept = await preparedOf(home.stateDir, runId);
    let verdict = await session.submit(first, { n: 1 });
    if ((verdict.receipt as { status: string }).status === "rejected") {
      verdict = await session.submit(first, { n: 1 });
    }
    expect(verdict.receipt).toMatchObject({ status: "accepted" });
    await waitFor(() => !processExists(kept), "the killed process to be gone");
    const second = await session.nextStep((s) => s.contract.step === "second");
    expect((await session.submit(second, { n: 2 })).receipt).toMatchObject({
      status: "accepted",
    });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    const requests = rows<{ node_id: string }>(
      home.stateDir,
      "SELECT node_id FROM interactive_requests WHERE run_id = :runId ORDER BY created_at",
      { runId },
    ).map((r) => r.node_id);
    expect(requests).toEqual(["first", "second"]);
    const attempts = rows<{ node_id: string; state: string }>(
      home.stateDir,
      "SELECT node_id, state FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
      { runId },
    ).map((a) => `${a.node_id}:${a.state}`);
    expect(attempts).toEqual(["first:ok", "second:ok", "done:ok"]);
    const epochs = await settledEpochs(home.stateDir, runId);
    expect(epochs.every((e) => e.pid !== kept || e.generation <= 2)).toBe(true);
    expect(violations(home.stateDir)).toEqual([]);
  });
});

describe("the workflow's source changed while a submission validates", () => {
  // The prepared process proposes the next step ahead only after the source check that follows
  // the validation (the workflow's validate code runs between the two): a step committed ahead
  // skips its epoch's own check, so an edit made meanwhile would start it from the old code.
  it("the run parks workflowSourceChanged; the next step is never started", async () => {
    const { home, project } = crashHome();
    const file = join(project, ".pi", "workflows", "edited.workflow.ts");
    writeFileSync(file, EDITED);
    const host = await startHostProcess(home.env);
    const session = await open(home, "s-edited");
    const gate = join(home.root, "gate-edited");
    gates.push(gate);
    const runId = await startRun(session, project, { gate }, "edited");
    const first = await session.nextStep();
    await preparedOf(home.stateDir, runId);
    const pending = session.submit(first, { n: 1 }, { waitMs: 25_000 });
    // The workflow's validate runs (in the prepared process): the file is edited meanwhile.
    await waitFor(() => existsSync(`${gate}.validating`), "the validate code to run");
    expect(validationChild(host.pid)).toBeNull();
    appendFileSync(file, "// edited while a submission validates\n");
    writeFileSync(gate, "open");
    // Validated before the edit: accepted; the next epoch finds the changed source.
    expect((await pending).receipt).toMatchObject({ status: "accepted" });
    // Parked, or (the old code's way) waiting on the next step started from the old source.
    const [settled] = await waitFor(() => {
      const found = rows<{ blocked: string | null; asked: number }>(
        home.stateDir,
        "SELECT blocked_reason AS blocked, (SELECT count(*) FROM interactive_requests q WHERE " +
          "q.run_id = r.run_id) AS asked FROM runs r WHERE run_id = :runId",
        { runId },
      );
      return (found[0].blocked !== null || found[0].asked > 1) && found;
    }, "the run to park or ask again");
    expect(settled.blocked).toBe("workflowSourceChanged");
    const started = rows<{ node: string }>(
      home.stateDir,
      "SELECT json_extract(payload_json, '$.nodeId') AS node FROM events WHERE run_id = :runId " +
        "AND type = 'node.started' ORDER BY seq",
      { runId },
    ).map((e) => e.node);
    expect(started).toEqual(["first"]);
    const requests = rows<{ node_id: string }>(
      home.stateDir,
      "SELECT node_id FROM interactive_requests WHERE run_id = :runId",
      { runId },
    ).map((r) => r.node_id);
    expect(requests).toEqual(["first"]);
    expect(violations(home.stateDir)).toEqual([]);
  });
});

/**
 * `first` (agent; its validate writes `<input.gate>.validating`, then waits for the file
 * `input.gate`), then `second` (agent): an accepted `first` has its next step proposed ahead.
 */
const EDITED = `
import { existsSync, writeFileSync } from "node:fs";
import { agent, defineWorkflow } from "pi-workflows";
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
export default defineWorkflow({
  name: "edited",
  startAt: "first",
  nodes: {
    first: agent({
      prompt: "Give a number",
      validate: async (output, { input }) => {
        writeFileSync(input.gate + ".validating", "");
        while (!existsSync(input.gate)) await wait(20);
        return { n: output.n };
      },
    }),
    second: agent({ prompt: "Give another number" }),
  },
  edges: [{ from: "first", to: "second" }],
});
`;

/** What a callback of the counted workflow saw in its module instance. */
interface Seen {
  calls: number;
  evaluation: number;
  pid: number;
}

function promptSaw(step: { contract: { message: string } }): Seen {
  return JSON.parse(/^\w+ (\{.*?\})/.exec(step.contract.message)![1]);
}

/** The run's epochs once every one is recorded as ended. */
async function settledEpochs(stateDir: string, runId: string) {
  let epochs = workerEpochs(stateDir, runId);
  await waitFor(() => {
    epochs = workerEpochs(stateDir, runId);
    return epochs.every((e) => e.status !== "live" && e.status !== "starting");
  }, "every epoch to be recorded");
  return epochs;
}

function validatingCount(stateDir: string): number {
  return rows(stateDir, "SELECT 1 FROM interactive_submissions WHERE outcome = 'validating'")
    .length;
}
