/**
 * Crashes at the durable boundaries of interactive steps, with real host, worker and validation
 * processes (SIGKILL by PID) and socket clients as the extension: the validation child dies
 * during validation; the host dies while a request is pending, during a validation, and while a
 * deadline passes. Nothing is lost, nothing is presented twice, the invariants hold. Here each
 * validation runs in a fresh `worker --validate` child; prepared-crash.test.ts covers the run's
 * prepared process.
 */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { startHostProcess, waitFor } from "../support/host.ts";
import { inPsPass } from "../support/ps-pass.ts";
import { rows, runRow, violations } from "../support/interactive-fixtures.ts";
import {
  crashHome,
  finished,
  gates,
  hostChildren,
  kill,
  open,
  processExists,
  restartHost,
  startRun,
  validationChild,
} from "./interaction-crash-helpers.ts";

/** Every validation in a fresh `worker --validate` child (prepared-crash.test.ts: the other). */
const FRESH = { PI_WORKFLOWS_MAX_PREPARED: "0" };

describe("interactive steps survive crashes", () => {
  // Not in the ps pass: the host learns of the child's death from its exit, and retires the
  // group of a child it reaped without a process-table read, as after every verdict; the cancel
  // case below stops a live child's group under `ps`.
  it.skipIf(inPsPass)(
    "a validation child SIGKILLed mid-validation rejects the provisional submission",
    async () => {
      const { home, project } = crashHome(FRESH);
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
    },
  );

  it("a cancel during a validation stops the validation child", async () => {
    const { home, project } = crashHome(FRESH);
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
    // The run's prepared process waits with the request; it leaves with the host.
    const { home, project } = crashHome();
    const first = await startHostProcess(home.env);
    let session = await open(home, "s-kill-host");
    const runId = await startRun(session, project, {});
    const step = await session.nextStep();
    expect((await session.present(step, "entry-1")).outcome).toBe("accepted");
    await waitFor(() => hostChildren(home.stateDir).length === 1, "the prepared process's row");
    const kept = hostChildren(home.stateDir)[0].pid;
    await kill(first);
    session.close();
    await waitFor(() => !processExists(kept), "the prepared process to leave with its host");

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

  // A submit carrying its step's presentation: the entry and the submission are savepoints of one
  // commit. The host killed inside it leaves neither (the resent tool call records both); killed
  // after it, both are durable and the resent call gets the verdict. The entry is recorded once,
  // before the submission, either way. Not in the ps pass: the host's kill and the next host's
  // takeover are those of "the host SIGKILLed while a request is pending" (the prepared process it
  // kept leaves with its host), and the point varies only the commit, not a process-table read.
  // With fresh validation children: a submission the run's prepared process validates at once is
  // recorded with its verdict, entry included (prepared-crash.test.ts's held cases carry one).
  for (
    const point of inPsPass ? [] : [
      "host.presentedSubmission.beforeCommit",
      "host.presentedSubmission.afterCommit",
    ]
  ) {
    it(`the host SIGKILLed at ${point}: the entry and the submission commit together`, async () => {
      const { home, project } = crashHome({ PI_WORKFLOWS_CRASH_AT: point, ...FRESH });
      const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
      const first = await startHostProcess(env);
      let session = await open(home, "s-presented");
      const runId = await startRun(session, project, {});
      const step = await session.nextStep();
      const presentation = { sessionEntryId: "entry-p" };
      await session.submit(step, { n: 9 }, { toolCallId: "t-presented", presentation })
        .catch(() => null);
      await first.exited;
      session.close();
      const recorded = () =>
        rows<{ entry: string | null; submissions: number }>(
          home.stateDir,
          "SELECT r.presentation_entry_id AS entry, (SELECT COUNT(*) FROM interactive_submissions " +
            "s WHERE s.request_id = r.request_id) AS submissions FROM interactive_requests r " +
            "WHERE r.run_id = :runId",
          { runId },
        );
      expect(recorded()).toEqual(
        point.endsWith("afterCommit")
          ? [{ entry: "entry-p", submissions: 1 }]
          : [{ entry: null, submissions: 0 }],
      );

      await restartHost(env);
      session = await open(home, "s-presented");
      const verdict = await session.submit(step, { n: 9 }, {
        toolCallId: "t-presented",
        presentation,
      });
      expect(verdict.receipt).toMatchObject({ status: "accepted" });
      expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
      const events = rows<{ type: string }>(
        home.stateDir,
        "SELECT type FROM events WHERE run_id = :runId AND type IN ('interaction.presented', " +
          "'interaction.submitted') ORDER BY seq",
        { runId },
      ).map((e) => e.type);
      expect(events).toEqual(["interaction.presented", "interaction.submitted"]);
      expect(violations(home.stateDir)).toEqual([]);
    });
  }

  // Not in the ps pass: the host's kill, the next host's takeover and step 9's new child are those
  // of the stuck fresh validation child below; here the child ends on its own, a host_children row
  // recovery finds gone, which recovery.test.ts reads under `ps` (a dead PID).
  it.skipIf(inPsPass)(
    "the host SIGKILLed during a validation: the next host validates it again (step 9)",
    async () => {
      const { home, project } = crashHome(FRESH);
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
    },
  );

  it.each([
    ["a fresh validation child", FRESH],
    ["the run's prepared process", {}],
  ])("the host SIGKILLed while %s is stuck validating: the next host reaps it", async (_, env) => {
    const { home, project } = crashHome(env);
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
    await waitFor(() => existsSync(`${gate}.blocked`), "the child to block in validate");
    // The host names it durably while it lives.
    const named = () => hostChildren(home.stateDir);
    await waitFor(() => named().length === 1, "the child's host_children row");
    const child = named()[0].pid;
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
    await waitFor(() => named().length === 1 && named()[0].pid === fresh, "the new child's row");
    writeFileSync(gate, "open");
    session = await open(home, "s-stuck-child");
    const verdict = await session.submit(step, { block: true, n: 4 }, { toolCallId: "t-block" });
    expect(verdict).toMatchObject({ outcome: "adopted", receipt: { status: "accepted" } });
    expect(await finished(home.stateDir, runId)).toMatchObject({ state: "completed" });
    await waitFor(() => named().length === 0, "the registry row to go with the child");
    expect(violations(home.stateDir)).toEqual([]);
  });

  // Not in the ps pass: the host's kill and the next host's takeover are those of "the host
  // SIGKILLed while a request is pending"; the case varies only what was committed (a deadline
  // that passed), no process-table read.
  it.skipIf(inPsPass)(
    "a deadline that passed while no host ran is applied first at start-up (step 8)",
    async () => {
      const { home, project } = crashHome(FRESH);
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
    },
  );
});
