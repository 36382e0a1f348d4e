/**
 * Deadlines of waiting runs across host deaths, with the real `host run`: a host SIGKILLed just
 * before and just after it commits a decision's default, and a host that was down while a default
 * and a checkpoint timeout fell due. Each time the next host applies exactly one resolution (never
 * two), before it schedules other work, and the state stays consistent.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";
import {
  type CliProcess,
  hostRequest,
  killAll,
  requestOnce,
  spawnCli,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

afterEach(killAll);

const DEFAULTED = `import {
  choice, compute, defineHumanChoices, defineWorkflow, humanDecision, humanDecisionEdge,
} from "pi-workflows";
const choices = defineHumanChoices({ ship: choice({ label: "Ship" }), hold: choice({ label: "Hold" }) });
export default defineWorkflow({
  name: "defaulted",
  startAt: "gate",
  nodes: {
    gate: humanDecision({
      choices,
      onTimeout: ({ input }) => ({ afterMs: input?.ms ?? 1200, response: { choice: "hold" } }),
      request: () => ({
        title: "Ship now?",
        subject: "ship",
        presentation: { schema: "pi-workflows.decision-presentation.v1", summary: "Ship?", blocks: [] },
      }),
    }),
    shipped: compute({ run: () => ({ shipped: true }) }),
    held: compute({ run: ({ outputs }) => ({ shipped: false, gate: outputs.gate }) }),
  },
  edges: [humanDecisionEdge({ from: "gate", choices, cases: { ship: "shipped", hold: "held" } })],
});
`;

const TIMED = `import { checkpoint, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "timed",
  startAt: "ask",
  nodes: {
    ask: checkpoint({ summary: "Quick!", timeoutMs: ({ input }) => input?.ms ?? 1200 }),
    late: compute({ run: ({ results }) => ({ outcome: results.ask.outcome }) }),
  },
  edges: [{ from: "ask", switch: { on: "$result.outcome", cases: { timed_out: "late" } } }],
});
`;

/**
 * The default host lease (15 s): the next host takes over at once from a SIGKILLed holder, its
 * recorded process being gone (state/host-claim.ts), and from a stopped one, which released it;
 * a short lease could lapse in a loaded machine's pause and stop the next host itself
 * (`host.claimLost reason=expired`) with the run unfinished.
 */
function setup(extra: NodeJS.ProcessEnv = {}): { home: TempHome; project: string } {
  const home = tempHome(extra);
  const project = join(home.root, "project");
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, "defaulted.workflow.ts"), DEFAULTED);
  writeFileSync(join(project, "timed.workflow.ts"), TIMED);
  return { home, project };
}

/** `host run`, retried while it refuses (a predecessor not proven gone keeps its lease). */
async function startHost(env: NodeJS.ProcessEnv): Promise<CliProcess> {
  const host = await waitFor<CliProcess | null>(
    async () => {
      const host = spawnCli(["host", "run"], env);
      const ready = await Promise.race([
        host.waitForStderr("host.ready", 20_000).then(() => true),
        host.exited.then(() => false),
      ]).catch(() => false);
      return ready ? host : null;
    },
    "a host to start",
    30_000,
    200,
  );
  return host!;
}

const request = (home: TempHome, operation: string, fields: Record<string, unknown>) =>
  requestOnce(home.socketPath, hostRequest(operation, fields));

async function startRun(
  home: TempHome,
  project: string,
  workflow: string,
  input: unknown = {},
): Promise<string> {
  const started = await request(home, "run.start", { payload: { workflow, cwd: project, input } });
  expect(started.error).toBeUndefined();
  return started.receipt.run.runId;
}

async function statusOf(home: TempHome, runId: string): Promise<any> {
  return (await request(home, "run.status", { runId })).receipt;
}

async function waitForRun(home: TempHome, runId: string, ok: (s: any) => boolean, what: string) {
  return await waitFor(
    async () => {
      const s = await statusOf(home, runId);
      return ok(s) ? s : null;
    },
    what,
    30_000,
  );
}

/** Read-only view of the facts that must exist exactly once. */
function facts(home: TempHome, runId: string) {
  const store = openStateStore({
    stateDir: home.stateDir,
    clock: systemClock,
    ids: randomIds,
    readOnly: true,
  });
  try {
    return {
      resolutions: queryAll<{ resolution: string }>(
        store,
        "SELECT h.resolution FROM human_decision_resolutions h JOIN human_decisions d " +
          "ON d.decision_id = h.decision_id WHERE d.run_id = :runId",
        { runId },
      ).map((r) => r.resolution),
      closingEvents: queryAll<{ type: string }>(
        store,
        "SELECT type FROM events WHERE run_id = :runId AND type IN ('run.answered', " +
          "'node.timed_out') ORDER BY seq",
        { runId },
      ).map((r) => r.type),
      invariants: checkInvariants(store),
    };
  } finally {
    closeStateStore(store);
  }
}

const lineIndex = (log: string, text: string) => log.split("\n").findIndex((l) => l.includes(text));

describe("a decision default across host deaths", () => {
  for (const point of ["host.decisionDefault.beforeCommit", "host.decisionDefault.afterCommit"]) {
    it(`SIGKILL at ${point}: exactly one resolution, and the run ends on the default`, async () => {
      const { home, project } = setup({
        PI_WORKFLOWS_CRASH_AT: point,
        PI_WORKFLOWS_CRASH_ONCE: "", // set below, inside the temp root
      });
      const env = { ...home.env, PI_WORKFLOWS_CRASH_ONCE: join(home.root, "crashed-once") };
      try {
        const first = await startHost(env);
        const runId = await startRun(home, project, "defaulted.workflow.ts");
        await waitForRun(home, runId, (s) => s.waiting !== undefined, "the run to wait");
        // The host kills itself at the default's commit point.
        expect(await first.exited).toMatchObject({ signal: "SIGKILL" });
        const dead = facts(home, runId);
        expect(dead.resolutions).toEqual(point.endsWith("beforeCommit") ? [] : ["timeoutDefault"]);
        expect(dead.invariants).toEqual([]);

        const second = await startHost(env);
        const done = await waitForRun(
          home,
          runId,
          (s) => s.run.state === "completed",
          "the run to complete",
        );
        expect(done.run.output).toEqual({ shipped: false, gate: { choice: "hold" } });
        const after = facts(home, runId);
        expect(after.resolutions).toEqual(["timeoutDefault"]);
        expect(after.closingEvents).toEqual(["run.answered"]);
        expect(after.invariants).toEqual([]);
        const log = second.stderr();
        if (point.endsWith("beforeCommit")) {
          // Nothing was committed: the next host applies it at start-up, before it listens.
          expect(lineIndex(log, "decisionDefault.applied")).toBeGreaterThanOrEqual(0);
          expect(lineIndex(log, "decisionDefault.applied")).toBeLessThan(
            lineIndex(log, "host.ready"),
          );
        } else {
          expect(log).not.toContain("decisionDefault.applied");
        }
        await stopProcess(second);
      } finally {
        await home.cleanup();
      }
    });
  }
});

describe("a host that was down across deadlines", () => {
  it("applies the default and the checkpoint timeout first thing at start-up", async () => {
    const { home, project } = setup();
    try {
      const first = await startHost(home.env);
      // Long enough to stop the host before either falls due.
      const defaulted = await startRun(home, project, "defaulted.workflow.ts", { ms: 4000 });
      const timed = await startRun(home, project, "timed.workflow.ts", { ms: 4000 });
      const gate = (await waitForRun(home, defaulted, (s) => !!s.waiting, "a wait")).waiting;
      const ask = (await waitForRun(home, timed, (s) => !!s.waiting, "a wait")).waiting;
      await stopProcess(first);
      expect(first.stderr()).not.toContain(".applied");
      const dueBy = Math.max(gate.default.at, ask.deadlineAt);
      await waitFor(() => Date.now() > dueBy + 50, "both deadlines to pass", 10_000);

      const second = await startHost(home.env);
      const log = second.stderr();
      const ready = lineIndex(log, "host.ready");
      expect(lineIndex(log, "decisionDefault.applied")).toBeGreaterThanOrEqual(0);
      expect(lineIndex(log, "decisionDefault.applied")).toBeLessThan(ready);
      expect(lineIndex(log, "waitTimeout.applied")).toBeGreaterThanOrEqual(0);
      expect(lineIndex(log, "waitTimeout.applied")).toBeLessThan(ready);
      const a = await waitForRun(home, defaulted, (s) => s.run.state === "completed", "done");
      const b = await waitForRun(home, timed, (s) => s.run.state === "completed", "done");
      expect(a.run.output).toEqual({ shipped: false, gate: { choice: "hold" } });
      expect(b.run.output).toEqual({ outcome: "timed_out" });
      expect(facts(home, defaulted)).toMatchObject({
        resolutions: ["timeoutDefault"],
        invariants: [],
      });
      expect(facts(home, timed)).toMatchObject({ resolutions: ["timedOut"], invariants: [] });
      await stopProcess(second);
    } finally {
      await home.cleanup();
    }
  });
});
