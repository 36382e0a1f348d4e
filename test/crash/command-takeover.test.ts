/**
 * A command committed by a host that dies before it answers: the host SIGKILLs itself right
 * after the command and its receipt commit (`host.command.<op>.afterCommit`). The same client
 * call, untouched by the test, retries with the same request id, starts the next host, and gets
 * the stored receipt: applied exactly once. Covers `run.pause` and `effect.resolve` (the run's
 * external node was in flight when an earlier host was SIGKILLed, so its effect is ambiguous).
 */
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import {
  hostPid,
  markTimes,
  setUpTakeover,
  type TakeoverSetup,
} from "../support/takeover-timing.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import { createHostClient } from "../../src/client/host-client.ts";
import { spawnCli } from "../support/host.ts";

let setup: TakeoverSetup | undefined;
afterEach(async () => {
  await setup?.cleanup();
  setup = undefined;
});

function crashEnv(point: string) {
  const once = join(tmpdir(), `piw-crash-once-${process.pid}-${Date.now()}`);
  return {
    once,
    env: { ...process.env, PI_WORKFLOWS_CRASH_AT: point, PI_WORKFLOWS_CRASH_ONCE: once },
  };
}

async function eventTypes(s: TakeoverSetup): Promise<string[]> {
  const status = await s.client.call("run.status", {
    runId: s.runId,
    payload: { eventsAfter: 0 },
  });
  return (status.events ?? []).map((e: { type: string }) => e.type);
}

it(
  "run.pause committed by a host that died before answering is answered by the next one, once",
  async () => {
    const crash = crashEnv("host.command.run.pause.afterCommit");
    setup = await setUpTakeover(crash.env);
    const firstHost = hostPid(setup.env.PI_WORKFLOWS_STATE_DIR!);
    const paused = await setup.client.call("run.pause", { runId: setup.runId });
    expect(existsSync(crash.once)).toBe(true); // the first host did die after the commit
    expect(paused.run).toMatchObject({ runId: setup.runId, paused: true });
    expect(hostPid(setup.env.PI_WORKFLOWS_STATE_DIR!)).not.toBe(firstHost);
    expect((await eventTypes(setup)).filter((t) => t === "run.paused")).toHaveLength(1);
  },
  120_000,
);

it(
  "effect.resolve committed by a host that died before answering runs the node again once",
  async () => {
    const crash = crashEnv("host.command.effect.resolve.afterCommit");
    setup = await setUpTakeover(crash.env, undefined, "action");
    // The host dies while the external node is in flight: the next host blocks the run.
    process.kill(hostPid(setup.env.PI_WORKFLOWS_STATE_DIR!)!, "SIGKILL");
    const blocked = await setup.client.call("run.status", { runId: setup.runId });
    expect(blocked.run.blockedReason).toBe("effectAmbiguous");
    const attemptId = blocked.attempts!.at(-1)!.attemptId;
    const resolved = await setup.client.call("effect.resolve", {
      runId: setup.runId,
      payload: { target: attemptId, verdict: "retry" },
    });
    expect(existsSync(crash.once)).toBe(true);
    expect(resolved.resolution).toMatchObject({ attemptId, verdict: "retry" });
    // The node runs once more (a second resolve would have been refused or run it twice).
    expect(await waitUntil(() => markTimes(setup!.marks).length === 2, 60_000)).toBe(true);
    const types = await eventTypes(setup);
    expect(types.filter((t) => t === "effect.resolved")).toHaveLength(1);
    expect(markTimes(setup.marks)).toHaveLength(2);
  },
  120_000,
);

it(
  "starts in flight from several clients across a kill -9 of the host are each applied exactly once",
  async () => {
    setup = await setUpTakeover();
    const project = join(setup.root, "p");
    const clients = Array.from(
      { length: 6 },
      () => createHostClient({ env: setup!.env, startTimeoutMs: 60_000 }),
    );
    try {
      const starts = clients.map((client, i) =>
        client.call("run.start", {
          payload: {
            workflow: join(project, "hold.workflow.ts"),
            input: { i },
            cwd: project,
            env: {},
            executionMode: "headless",
          },
          timeoutMs: 60_000,
        })
      );
      // Kill while the starts are in flight (each waits for its resolver child).
      await new Promise((resolve) => setTimeout(resolve, 150));
      process.kill(hostPid(setup.env.PI_WORKFLOWS_STATE_DIR!)!, "SIGKILL");
      const started = await Promise.all(starts);
      const ids = started.map((s) => s.run.runId);
      expect(new Set(ids).size).toBe(6);
      const list = await setup.client.call("run.list", { payload: { all: true } });
      // The held run plus exactly one run per start.
      expect(list.runs.map((r: { runId: string }) => r.runId).sort()).toEqual(
        [setup.runId, ...ids].sort(),
      );
    } finally {
      for (const client of clients) client.close();
    }
  },
  180_000,
);

it("CLI starts in flight across a kill -9 of the host all succeed, each applied once", async () => {
  setup = await setUpTakeover();
  const project = join(setup.root, "p");
  const clis = Array.from({ length: 4 }, (_, i) =>
    spawnCli(
      [
        "start",
        "hold.workflow.ts",
        "--cwd",
        project,
        "--input-json",
        JSON.stringify({ i }),
        "--json",
      ],
      setup!.env,
    ));
  // Kill once the CLI processes are up and talking to the host.
  await waitUntil(() => clis.every((c) => c.child.pid !== undefined), 10_000);
  await new Promise((resolve) => setTimeout(resolve, 400));
  process.kill(hostPid(setup.env.PI_WORKFLOWS_STATE_DIR!)!, "SIGKILL");
  const exits = await Promise.all(clis.map((c) => c.exited));
  const ids = clis.map((c, i) => {
    expect(exits[i].code, c.stderr()).toBe(0);
    return JSON.parse(c.stdout()).run.runId as string;
  });
  expect(new Set(ids).size).toBe(4);
  const list = await setup.client.call("run.list", { payload: { all: true } });
  expect(list.runs.map((r: { runId: string }) => r.runId).sort()).toEqual(
    [setup.runId, ...ids].sort(),
  );
}, 180_000);
