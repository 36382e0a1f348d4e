/**
 * Each failure class of the spec is produced by its own cause, and by nothing else: after each
 * scenario the failure-class codes in the run row (error, blocked reason), on its attempts and
 * in its worker epoch outcomes are exactly the expected ones. `hostUnavailable` belongs to the client (test/client/*).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FAILURE_CLASSES } from "../../../src/protocol/failures.ts";
import { existsSync, writeFileSync } from "node:fs";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { pauseRun } from "../../../src/state/transitions/run-commands.ts";
import { nextLaunchableRuns } from "../../../src/state/transitions/run-launch.ts";
import { queryAll } from "../../../src/state/statements.ts";
import { type Harness, isTerminal, WORKER_ENTRY } from "../../support/supervision.ts";
import { harnessPerTest } from "../../support/harness-per-test.ts";

const newHarness = harnessPerTest();

const ROGUE = join(import.meta.dirname, "fixtures", "rogue-worker.ts");

/** Epoch outcomes that name a failure class. */
const EPOCH_CLASS: Record<string, string> = {
  crashed: "workerCrashed",
  timedOut: "workerTimedOut",
  claimLost: "claimLost",
};

const isClass = (c: string) => (FAILURE_CLASSES as readonly string[]).includes(c);

/** Failure classes in the run row itself: its error and its blocked reason. */
function runClasses(h: Harness, runId: string): string[] {
  const run = h.run(runId);
  const codes = new Set<string>();
  if (run.error) codes.add(run.error.code);
  if (run.blockedReason === "workflowSourceChanged") codes.add("sourceChanged");
  if (run.blockedReason === "effectAmbiguous") codes.add("effectAmbiguous");
  return [...codes].filter(isClass).sort();
}

/** Failure classes on the run's node attempts (why each one ended or was interrupted). */
function attemptClasses(h: Harness, runId: string): string[] {
  const codes = queryAll<{ error_code: string | null }>(
    h.store,
    "SELECT error_code FROM node_attempts WHERE run_id = :runId",
    { runId },
  ).map((a) => a.error_code ?? "");
  return [...new Set(codes)].filter(isClass).sort();
}

/** Failure classes named by the run's worker epoch outcomes. */
function epochClasses(h: Harness, runId: string): string[] {
  const codes = new Set<string>();
  for (
    const w of queryAll<{ status: string }>(
      h.store,
      "SELECT status FROM run_workers WHERE run_id = :runId",
      { runId },
    )
  ) if (EPOCH_CLASS[w.status]) codes.add(EPOCH_CLASS[w.status]);
  return [...codes].sort();
}

const workflow = (name: string, node: string, effect = "compute") => `
import { action, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: ${JSON.stringify(name)},
  startAt: "a",
  nodes: { a: ${effect}({ run: ${node} }) },
  edges: [],
});
`;

describe("failure classification", () => {
  it("workerCrashed: a worker that dies without a terminal message, bounded retries", async () => {
    const h = await newHarness({}, { maxCrashes: 2 });
    const runId = await h.startRun(
      h.writeWorkflow(
        "crash.workflow.ts",
        workflow("crash", `() => process.kill(process.pid, "SIGKILL")`),
      ),
    );
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(run.error?.code).toBe("workerCrashed");
    expect(runClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(attemptClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(epochClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(h.invariants()).toEqual([]);
  });

  it("nodeFailed: workflow code throws", async () => {
    const h = await newHarness();
    const runId = await h.startRun(
      h.writeWorkflow("fail.workflow.ts", workflow("fail", `() => { throw new Error("no") }`)),
    );
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(runClasses(h, runId)).toEqual(["nodeFailed"]);
    expect(attemptClasses(h, runId)).toEqual(["nodeFailed"]);
    expect(epochClasses(h, runId)).toEqual([]);
  });

  it("effectAmbiguous: a worker dies inside an external action", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow(
      "act.workflow.ts",
      workflow("act", `() => process.kill(process.pid, "SIGKILL")`, "action"),
    ));
    const run = await h.waitForRun(runId, (r) => r.blockedReason !== null);
    expect([run.state, run.queueState, run.blockedReason]).toEqual([
      "running",
      "parked",
      "effectAmbiguous",
    ]);
    // The run records the ambiguity (not a failure); the epoch records the crash that caused it.
    expect(runClasses(h, runId)).toEqual(["effectAmbiguous"]);
    expect(attemptClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(epochClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(h.invariants()).toEqual([]);
  });

  it("sourceChanged: the file changed after the run was recorded; new code never runs", async () => {
    const h = await newHarness();
    const marker = join(h.root, "ran.txt");
    const path = h.writeWorkflow("src.workflow.ts", workflow("src", `() => ({ v: 1 })`));
    const resolved = await h.supervision.resolve({ workflow: path, input: {}, cwd: h.projectDir });
    expect(resolved.ok).toBe(true);
    writeFileSync(
      path,
      `import { existsSync, writeFileSync } from "node:fs";
import { waitUntil } from "../../../src/os/stop-group.ts";
import { pauseRun } from "../../../src/state/transitions/run-commands.ts";
import { nextLaunchableRuns } from "../../../src/state/transitions/run-launch.ts";\n` +
        workflow("src", `() => { writeFileSync(${JSON.stringify(marker)}, "x"); return {}; }`),
    );
    const runId = h.enqueueResolved(resolved);
    const run = await h.waitForRun(runId, (r) => r.blockedReason !== null);
    expect(run.blockedReason).toBe("workflowSourceChanged");
    expect(runClasses(h, runId)).toEqual(["sourceChanged"]);
    expect(attemptClasses(h, runId)).toEqual([]);
    expect(epochClasses(h, runId)).toEqual([]);
    expect(existsSync(marker)).toBe(false);
    // The scheduler never picks it again until an explicit resume.
    expect(nextLaunchableRuns(h.store, 100).map((r) => r.runId)).not.toContain(runId);
    expect(h.invariants()).toEqual([]);
  });

  it("protocolRejected: a worker that sends a malformed payload is refused and stopped", async () => {
    const h = await newHarness({}, {
      maxCrashes: 1,
      workerCommand: (args) =>
        args.includes("--resolve")
          ? {
            command: process.execPath,
            args: [WORKER_ENTRY, "--resolve"],
          }
          : { command: process.execPath, args: [ROGUE] },
    });
    const runId = await h.startRun(h.writeWorkflow("p.workflow.ts", workflow("p", `() => ({})`)));
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("failed");
    expect(run.error?.code).toBe("protocolRejected");
    expect(runClasses(h, runId)).toEqual(["protocolRejected"]);
    expect(attemptClasses(h, runId)).toEqual([]);
    // Epoch outcomes have no protocol class: the host stopped the process, recorded `crashed`.
    expect(epochClasses(h, runId)).toEqual(["workerCrashed"]);
  });

  it("workerTimedOut: a node that spins past its declared deadline", async () => {
    const h = await newHarness();
    const runId = await h.startRun(h.writeWorkflow(
      "spin.workflow.ts",
      `import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "spin",
  startAt: "a",
  nodes: { a: compute({ timeoutMs: 300, run: () => { for (;;) {} } }) },
  edges: [],
});`,
    ));
    const run = await h.waitForRun(runId, isTerminal);
    expect(run.state).toBe("timed_out");
    expect(runClasses(h, runId)).toEqual(["workerTimedOut"]);
    expect(attemptClasses(h, runId)).toEqual(["workerTimedOut"]);
    expect(epochClasses(h, runId)).toEqual(["workerTimedOut"]);
  });

  it("claimLost: a worker whose claim was released is a handoff, never a run failure", async () => {
    const h = await newHarness();
    const marker = join(h.root, "started");
    const runId = await h.startRun(h.writeWorkflow(
      "slow.workflow.ts",
      `import { writeFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "slow",
  startAt: "a",
  nodes: { a: compute({ run: async () => {
    writeFileSync(${JSON.stringify(marker)}, "");
    await new Promise((r) => setTimeout(r, 500));
    return {};
  } }) },
  edges: [],
});`,
    ));
    expect(await waitUntil(() => existsSync(marker), 15_000)).toBe(true);
    pauseRun(h.store, { runId, claim: h.supervision.claimOf(runId) });
    expect(await waitUntil(() => h!.supervision.activeWorkerCount() === 0, 15_000)).toBe(true);
    expect(runClasses(h, runId)).toEqual([]);
    expect(attemptClasses(h, runId)).toEqual([]);
    expect(epochClasses(h, runId)).toEqual(["claimLost"]);
    expect(h.run(runId).state).toBe("running");
    expect(h.invariants()).toEqual([]);
  });

  it("workerCrashed, then resumed: committed facts past one message reach the next worker", async () => {
    const h = await newHarness();
    const marker = join(h.root, "crashed-once");
    const runId = await h.startRun(h.writeWorkflow(
      "big.workflow.ts",
      `import { existsSync, writeFileSync } from "node:fs";
import { compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "big",
  startAt: "a",
  nodes: {
    a: compute({ run: () => "a".repeat(600_000) }),
    b: compute({ run: () => "b".repeat(600_000) }),
    c: compute({ run: () => {
      if (!existsSync(${JSON.stringify(marker)})) {
        writeFileSync(${JSON.stringify(marker)}, "");
        process.kill(process.pid, "SIGKILL");
      }
      return "c";
    } }),
  },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "c" }],
});`,
    ));
    const run = await h.waitForRun(runId, isTerminal);
    expect([run.state, run.output]).toEqual(["completed", "c"]);
    // Node c's worker crashed; the relaunch received 1.2 MB of facts in pieces and went on.
    expect(attemptClasses(h, runId)).toEqual(["workerCrashed"]);
    expect(h.invariants()).toEqual([]);
  });
});
