/**
 * `crash: "every-boundary"`: the check a workflow author cannot build alone. The scenario first
 * runs uninterrupted with every worker recording the durable boundaries it passes
 * (`PI_WORKFLOWS_CRASH_TRACE`, src/base/crash-point.ts): before and after each message to
 * the host is sent and after its reply, numbered per process (`worker.node.finished.afterSend#2`).
 * Then, once per boundary, the same scenario runs again on the same host, and the worker that
 * reaches that boundary SIGKILLs itself there (`PI_WORKFLOWS_CRASH_AT`, once per run); the host
 * recovers the run as it would in production. Each recovered run must end like the
 * uninterrupted one: same state, run output and node outputs, the same effects each applied
 * once, and the same files in its copy of the project directory (an unmanaged side effect that
 * ran twice shows there). A run the host parks for an operator (`effectAmbiguous`: an action or
 * shell without a managed effect was interrupted mid-flight) is the designed safe stop, reported
 * as `blocked`, not as a difference.
 */
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
} from "node:fs";
import { join, relative } from "node:path";
import { isDeepStrictEqual } from "node:util";
import { receiptOf } from "../client/command-receipt.ts";
import { isTerminalRunState } from "../state/journal.ts";
import { isTimeOut } from "./answers.ts";
import type { BoundaryOutcome, CrashReport, WorkflowTestResult } from "./run-result.ts";
import { emptyDir, type KitRun, runScenario } from "./run-scenario.ts";

/** A boundary where a recovered run ended differently; the message lists every one. */
export class CrashBoundaryError extends Error {
  readonly report: CrashReport;
  constructor(report: CrashReport) {
    const bad = report.boundaries.filter((b) => b.outcome === "differs");
    super(
      `testWorkflow: crash at ${bad.length} of ${report.boundaries.length} durable boundaries ` +
        "ended differently from the uninterrupted run:\n" +
        bad.map((b) => `  ${b.boundary}: ${b.differences.join("; ")}`).join("\n"),
    );
    this.name = "CrashBoundaryError";
    this.report = report;
  }
}

/**
 * Crash runs at once. Each is mostly waiting on process starts, so a few overlap well even on
 * two cores; more only queue for CPU (the host starts at most 4 workers at a time anyway).
 */
const CRASH_LANES = 3;

export async function crashEveryBoundary(
  kit: KitRun,
  projectDir: string | undefined,
): Promise<WorkflowTestResult> {
  const work = realpathSync(mkdtempSync(join(kit.host.root, "crash-")));
  const copy = (name: string) => {
    const dir = join(work, name);
    if (projectDir === undefined) return emptyDir(dir);
    cpSync(realpathSync(projectDir), dir, { recursive: true });
    return realpathSync(dir);
  };
  const trace = join(work, "trace");
  const baseDir = copy("normal");
  const normal = await runScenario(kit, baseDir, { PI_WORKFLOWS_CRASH_TRACE: trace });
  const boundaries = existsSync(trace)
    ? [...new Set(readFileSync(trace, "utf8").split("\n").filter(Boolean))]
    : [];
  const baseFiles = snapshot(baseDir);
  const started = performance.now();
  const outcomes: BoundaryOutcome[] = new Array(boundaries.length);
  let next = 0;
  await endRun(kit, normal);
  // Each lane works in one directory, emptied and copied afresh before each of its runs (the
  // first lane's is the normal run's, once its files are read): the same project path run after
  // run, so the host resolves the workflow once per lane, not once per run (kit-host.ts).
  const lane = async (name: string) => {
    for (let i = next++; i < boundaries.length; i = next++) {
      const boundary = boundaries[i];
      rmSync(join(work, name), { recursive: true, force: true });
      const dir = copy(name);
      const marker = join(work, `crashed-${i}`);
      const run = await runScenario(kit, dir, {
        PI_WORKFLOWS_CRASH_AT: boundary,
        PI_WORKFLOWS_CRASH_ONCE: marker,
      });
      outcomes[i] = judge(boundary, existsSync(marker), normal, run, baseFiles, snapshot(dir));
      await endRun(kit, run);
    }
  };
  // A jump of virtual time would expire the claims of the other runs' live workers.
  const lanes = mayMoveClock(kit.scenario) ? 1 : Math.min(CRASH_LANES, boundaries.length);
  await Promise.all(
    Array.from({ length: lanes }, (_, k) => lane(k === 0 ? "normal" : `lane-${k}`)),
  );
  const report: CrashReport = { boundaries: outcomes, ms: Math.round(performance.now() - started) };
  if (outcomes.some((o) => o.outcome === "differs")) throw new CrashBoundaryError(report);
  return { ...normal, crash: report };
}

/**
 * Cancels a run the scenario left waiting or blocked, so that nothing of it (a deadline, a kept
 * process) can act in its project directory once the next run of the lane works there.
 */
async function endRun(kit: KitRun, run: WorkflowTestResult): Promise<void> {
  if (isTerminalRunState(run.state)) return;
  receiptOf("run.cancel", await kit.host.connection.request("run.cancel", { runId: run.runId }));
}

function mayMoveClock(scenario: KitRun["scenario"]): boolean {
  return [...Object.values(scenario.answers), ...Object.values(scenario.human)].some((answer) =>
    typeof answer === "function" || isTimeOut(answer) ||
    (Array.isArray(answer) && answer.some(isTimeOut))
  );
}

function judge(
  boundary: string,
  crashed: boolean,
  normal: WorkflowTestResult,
  run: WorkflowTestResult,
  baseFiles: Map<string, string>,
  files: Map<string, string>,
): BoundaryOutcome {
  const state = run.state;
  if (!crashed) return { boundary, outcome: "notReached", differences: [], state };
  if (run.status.run.blockedReason === "effectAmbiguous" && normal.state !== state) {
    return { boundary, outcome: "blocked", differences: [], state };
  }
  const differences: string[] = [];
  const show = (value: unknown) => JSON.stringify(value)?.slice(0, 200) ?? "undefined";
  if (state !== normal.state) differences.push(`state ${state}, expected ${normal.state}`);
  if (!isDeepStrictEqual(run.output, normal.output)) {
    differences.push(`output ${show(run.output)}, expected ${show(normal.output)}`);
  }
  for (const node of new Set([...Object.keys(normal.outputs), ...Object.keys(run.outputs)])) {
    if (!isDeepStrictEqual(run.outputs[node], normal.outputs[node])) {
      differences.push(
        `node ${node} output ${show(run.outputs[node])}, expected ${show(normal.outputs[node])}`,
      );
    }
  }
  const managed = (r: WorkflowTestResult) =>
    r.effects.filter((e) => e.effectType !== "unmanaged").map((e) =>
      `${e.nodeId}:${e.effectType}:${e.state}`
    );
  if (!isDeepStrictEqual(managed(run), managed(normal))) {
    differences.push(
      `effects ${managed(run).join(",") || "none"}, expected ${
        managed(normal).join(",") || "none"
      }`,
    );
  }
  for (const effect of run.effects) {
    if (effect.effectType !== "unmanaged" && effect.applied > 1) {
      differences.push(
        `effect ${effect.effectType} of node ${effect.nodeId} applied ${effect.applied} times`,
      );
    }
  }
  for (const path of new Set([...baseFiles.keys(), ...files.keys()])) {
    const want = baseFiles.get(path);
    const got = files.get(path);
    if (want === got) continue;
    if (got === undefined) differences.push(`file ${path} missing`);
    else if (want === undefined) differences.push(`file ${path} should not exist`);
    else differences.push(`file ${path} differs: ${show(got)}, expected ${show(want)}`);
  }
  return { boundary, outcome: differences.length ? "differs" : "same", differences, state };
}

/** Every file under `dir` (relative path -> contents), for comparing two project copies. */
function snapshot(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (at: string) => {
    for (const name of readdirSync(at)) {
      const path = join(at, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path, "latin1"));
    }
  };
  walk(dir);
  return files;
}
