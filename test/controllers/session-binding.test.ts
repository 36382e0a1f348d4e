/**
 * Approved session bindings against one real host process (controller worker, resolver, run
 * workers and validation children are real processes; socket clients stand in for the Pi
 * extension of each session): a controller's interactive child waits `unsupportedInput` without
 * a binding, waits `sessionBusy` while the approved session runs its own workflow, then runs in
 * that session (its step is presented there and submitted from there) and its end settles the
 * parent. Bad input is refused in one line; no receipt, CLI view or log line names the session.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connectHost, type HostConnection } from "../../src/client/mod.ts";
import type { HostResponse } from "../../src/protocol/host-response.ts";
import {
  type CliProcess,
  hostRequest,
  killAll,
  RawClient,
  runCliProcess,
  startHostProcess,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { SessionClient } from "../support/interactive-session.ts";
import { rows, runRow, violations } from "../support/interactive-fixtures.ts";
import { ASK, ASKER } from "./session-binding-fixtures.ts";

const SESSION = "sess-approved-7f3";
const OTHER_SESSION = "sess-other-2c9";
const home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "600000" });
const project = join(home.root, "project");
let host: CliProcess;
let cli: HostConnection;
const sessions: SessionClient[] = [];

beforeAll(async () => {
  mkdirSync(join(project, ".pi", "workflows"), { recursive: true });
  mkdirSync(join(project, ".pi", "controllers"), { recursive: true });
  writeFileSync(join(project, ".pi", "workflows", "ask.workflow.ts"), ASK);
  writeFileSync(join(project, ".pi", "controllers", "asker.controller.ts"), ASKER);
  host = await startHostProcess(home.env);
  cli = await connectHost(home.socketPath, { clientId: "cli-test", requestTimeoutMs: 40_000 });
}, 30_000);
afterAll(async () => {
  cli?.close();
  for (const s of sessions) s.close();
  await killAll();
  await home.cleanup();
});

async function session(id: string): Promise<SessionClient> {
  const s = await SessionClient.open(home.socketPath, id);
  sessions.push(s);
  return s;
}

function call(operation: string, payload: unknown): Promise<HostResponse> {
  return cli.request(operation as never, { payload } as never);
}

interface Status {
  child: string;
  reason: string | null;
  runId: string | null;
}

async function statusOf(key: string): Promise<Status> {
  const got = await call("controller.get", { cwd: project, controller: "asker", key });
  expect(got.outcome).toBe("accepted");
  return (got.receipt as unknown as { resource: { status: { controllerStatus: Status } } })
    .resource.status.controllerStatus;
}

async function waitStatus(
  key: string,
  accept: (s: Status) => boolean,
  what: string,
): Promise<Status> {
  return (await waitFor<Status | false>(
    async () => {
      const s = await statusOf(key);
      return accept(s) && s;
    },
    what,
    40_000,
    100,
  )) as Status;
}

describe("an approved session binding", () => {
  it("refuses bad input in one line", async () => {
    const bindAsker = { cwd: project, controller: "asker", sessionId: SESSION };
    const unknown = await call("controller.bind", { ...bindAsker, controller: "nobody" });
    expect(unknown).toMatchObject({ outcome: "notFound", error: { code: "controllerNotFound" } });
    // A payload that fails validation is answered once and its connection closed.
    const invalid = async (payload: unknown) => {
      const raw = await RawClient.connect(home.socketPath);
      const answer = await raw.request({ ...hostRequest("controller.bind"), payload });
      await raw.waitClosed();
      return answer as HostResponse;
    };
    const empty = await invalid({ ...bindAsker, sessionId: "" });
    expect(empty).toMatchObject({ outcome: "rejected", error: { code: "invalidRequest" } });
    expect(empty.error!.message).toContain("sessionId");
    const relative = await invalid({ ...bindAsker, cwd: "project" });
    expect(relative).toMatchObject({ outcome: "rejected", error: { code: "invalidRequest" } });
    const none = await call("controller.unbind", { cwd: project, controller: "nobody" });
    expect(none).toMatchObject({ outcome: "notFound", error: { code: "controllerNotFound" } });
    for (const answer of [unknown, empty, relative, none]) {
      expect(answer.error!.message).not.toContain("\n");
    }
    const viaCli = await runCliProcess(["controller", "bind", "asker", "--cwd", project], home.env);
    expect(viaCli.code).toBe(2);
    expect(viaCli.stderr).toContain("/controller bind asker");
  });

  it("waits for an approval, then for the busy session, then runs its step in that session", async () => {
    const applied = await call("controller.apply", {
      cwd: project,
      controller: "asker",
      key: "r1",
      spec: { topic: "apples" },
    });
    expect(applied.outcome).toBe("accepted");
    // No binding yet: the child parks without a run, with a clear unsupported-input result.
    await waitStatus(
      "r1",
      (s) => s.reason === "unsupportedInput",
      "the child to wait for a binding",
    );
    const detail = await call("controller.get", { cwd: project, controller: "asker", key: "r1" });
    const workflows = (detail.receipt as { workflows: Record<string, unknown>[] }).workflows;
    expect(workflows).toEqual([
      expect.objectContaining({ state: "waiting", blockedReason: "unsupportedInput" }),
    ]);
    expect(String(workflows[0]!.blockedDetail)).toContain("/controller bind");
    const nothing = await call("controller.unbind", { cwd: project, controller: "asker" });
    expect(nothing).toMatchObject({
      outcome: "notFound",
      error: { code: "sessionBindingNotFound" },
    });

    // The session runs a workflow of its own; then it approves itself.
    const pi = await session(SESSION);
    const own = await pi.start("ask", project, { topic: "own" });
    expect(own.outcome).toBe("accepted");
    const ownRunId = (own.receipt as { run: { runId: string } }).run.runId;
    const bound = await call("controller.bind", {
      cwd: project,
      controller: "asker",
      sessionId: SESSION,
    });
    expect(bound.outcome).toBe("accepted");
    expect(bound.receipt).toMatchObject({ controller: "asker", replaced: false, unchanged: false });
    const bindingId = (bound.receipt as { bindingId: string }).bindingId;
    await waitStatus("r1", (s) => s.reason === "sessionBusy", "the child to wait for the session");

    // The session's own run ends: the child starts there, bound to the session.
    const ownStep = await pi.nextStep((s) => s.runId === ownRunId);
    expect((await pi.submit(ownStep, { n: 1 })).receipt).toMatchObject({ status: "accepted" });
    const running = await waitStatus("r1", (s) => s.runId !== null, "the child run to start");
    const childRunId = running.runId!;
    expect(childRunId).not.toBe(ownRunId);
    const binding = rows<{ execution_mode: string; origin_session_id: string }>(
      home.stateDir,
      "SELECT execution_mode, origin_session_id FROM run_bindings WHERE run_id = :runId",
      { runId: childRunId },
    );
    expect(binding).toEqual([{ execution_mode: "interactive", origin_session_id: SESSION }]);

    // Another session never sees the child's step; the approved one does and answers it.
    const other = await session(OTHER_SESSION);
    const step = await pi.nextStep((s) => s.runId === childRunId);
    expect(step.contract.message).toContain("apples");
    expect((await other.claim()).interaction).toBeNull();
    expect((await pi.present(step, "entry-child-1")).outcome).toBe("accepted");
    expect((await pi.submit(step, { n: 42 })).receipt).toMatchObject({ status: "accepted" });
    await waitStatus("r1", (s) => s.child === "succeeded", "the parent to see its child succeed");
    expect(runRow(home.stateDir, childRunId)).toMatchObject({ state: "completed" });

    // Views name the binding, never the session.
    const list = await call("controller.list", { cwd: project });
    expect(list.receipt).toMatchObject({
      controllers: [{ name: "asker", sessionBinding: { bindingId } }],
    });
    const text = await runCliProcess(["controller", "list", "--cwd", project], home.env);
    expect(text.stdout).toContain(`session binding ${bindingId}`);
    for (const output of [JSON.stringify(list), JSON.stringify(detail), text.stdout]) {
      expect(output).not.toContain(SESSION);
    }
    expect(violations(home.stateDir)).toEqual([]);
  });

  it("a second session replaces the approval; revoking it parks new children again", async () => {
    const again = await call("controller.bind", {
      cwd: project,
      controller: "asker",
      sessionId: SESSION,
    });
    expect(again.receipt).toMatchObject({ unchanged: true });
    const replaced = await call("controller.bind", {
      cwd: project,
      controller: "asker",
      sessionId: OTHER_SESSION,
    });
    expect(replaced.receipt).toMatchObject({ replaced: true, unchanged: false });
    const unbound = await runCliProcess(
      ["controller", "unbind", "asker", "--cwd", project],
      home.env,
    );
    expect(unbound.code).toBe(0);
    expect(unbound.stdout).toContain("Revoked session binding");
    const live = rows<{ n: number }>(
      home.stateDir,
      "SELECT COUNT(*) AS n FROM controller_session_bindings WHERE revoked_at IS NULL",
    );
    expect(live).toEqual([{ n: 0 }]);
    // A new generation asks for a new child: with the binding revoked it waits again.
    await call("controller.apply", {
      cwd: project,
      controller: "asker",
      key: "r1",
      spec: { topic: "pears" },
    });
    await waitStatus("r1", (s) => s.reason === "unsupportedInput", "the new child to wait");
    // A headless ensure of a workflow with agent steps and no Pi declared still fails at once.
    await call("controller.apply", {
      cwd: project,
      controller: "asker",
      key: "r2",
      spec: { topic: "plums", interactive: false },
    });
    await waitStatus("r2", (s) => s.child === "failed", "the headless child to fail");
    for (const output of [host.stderr(), unbound.stdout, unbound.stderr]) {
      expect(output).not.toContain(SESSION);
      expect(output).not.toContain(OTHER_SESSION);
    }
    expect(violations(home.stateDir)).toEqual([]);
  });
});
