/**
 * What `/workflow` and the `workflow` tool both do, as plain functions returning the text to
 * show: list the discovered workflows, show a run, pause/resume/cancel it, answer what it waits
 * for. A run defaults to this session's run. Failures throw; callers turn them into one line.
 */
import { formatRunSpend } from "../protocol/budget.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { listStartableWorkflows, type StartableWorkflow } from "../base/startable-workflows.ts";
import type { RunStatusReceipt, RunSummary } from "../protocol/run-operations.ts";
import {
  ambiguousEffectLines,
  blockedEffectResolveLines,
  endedEffectResolveLines,
} from "../render/effect-resolve-text.ts";
import { answerFromText } from "../render/answer-text.ts";
import { goneIncludes, sourceWayOn } from "../base/source-change-text.ts";
import { operatorName } from "../client/operator-name.ts";
import { widgetLines } from "./progress-view.ts";
import type { WorkflowSession } from "./workflow-session.ts";

export type ListedWorkflow = StartableWorkflow;

/**
 * Why a run cannot start in print or JSON mode: its steps run in this session, which ends with
 * the prompt, so the run would wait for a session that never comes back.
 */
export const NO_SESSION_TO_RUN_IN = (workflow: string) =>
  `a run started here runs its steps in this Pi session, which ends with this prompt (print ` +
  `mode): run it headless instead: pi-workflows start ${workflow} --wait`;

/** Project files, then the agent dir's, then built-ins; an earlier name hides a later one. */
export function discoveredWorkflows(cwd: string): ListedWorkflow[] {
  return listStartableWorkflows(cwd);
}

const PAGE_ITEMS = 50;
const PAGE_CHARS = 3_500;

/** One page of the list (at most 50 entries or 3,500 characters) and where the next starts. */
export function listPage(cwd: string, offset = 0): string {
  const all = discoveredWorkflows(cwd);
  if (all.length === 0) return "No workflows found.";
  const lines: string[] = [];
  let chars = 0;
  let index = offset;
  for (; index < all.length && lines.length < PAGE_ITEMS; index++) {
    const w = all[index];
    const line = `${w.name}  [${w.source}]  ${w.detail}`;
    if (lines.length > 0 && chars + line.length > PAGE_CHARS) break;
    lines.push(line);
    chars += line.length + 1;
  }
  if (lines.length === 0) return `No workflows at offset ${offset} (there are ${all.length}).`;
  const header = `Workflows ${offset + 1}-${index} of ${all.length}:`;
  const more = index < all.length ? `\n(more: offset ${index})` : "";
  return `${header}\n${lines.join("\n")}${more}`;
}

/** The run to act on: the one named, else this session's. */
export function resolveRunId(session: WorkflowSession, runId: string | null | undefined): string {
  const id = runId ?? session.runs.activeRunId ?? session.presenter.lastClaim?.activeRun?.runId ??
    session.presenter.current?.runId ?? session.runs.lastRunId;
  if (!id) throw new Error("No workflow run in this session: pass a run id");
  return id;
}

export function runLine(run: RunSummary): string {
  const flags = [run.state, run.queueState !== run.state ? `queue ${run.queueState}` : null]
    .concat(
      run.paused ? ["paused"] : [],
      run.blockedReason ? [`blocked: ${run.blockedReason}`] : [],
    )
    .filter((part): part is string => part !== null);
  const title = run.title ? ` — ${run.title}` : "";
  return `Run ${run.runId} ${run.workflowName}${title}: ${flags.join(", ")}`;
}

export async function statusText(session: WorkflowSession, runId?: string | null): Promise<string> {
  session.link();
  const id = resolveRunId(session, runId);
  return runStatusText(await session.client.call("run.status", { runId: id }), Date.now());
}

/** `/workflow status`'s text for a `run.status` receipt. */
export function runStatusText(status: RunStatusReceipt, now: number): string {
  const { run } = status;
  const attempts = status.attempts ?? [];
  const lines = [runLine(run)];
  if (run.forkedFrom) {
    lines.push(`Forked from ${run.forkedFrom.runId} at ${run.forkedFrom.nodeId}`);
  }
  if (run.spend) lines.push(`Spend: ${formatRunSpend(run.spend, run.budget)}`);
  lines.push(...widgetLines({ run, attempts, now }));
  if (run.output !== undefined) {
    lines.push(`Output: ${clip(JSON.stringify(run.output))}`);
  }
  if (run.error) lines.push(`Error: ${run.error.message}`);
  // A plain resume is refused while blocked on an ambiguous effect: the CLI's verdict commands
  // are the way on, so they are named here too (full id: it is what this view shows).
  const ambiguous = status.ambiguousEffects ?? [];
  lines.push(...ambiguousEffectLines(ambiguous));
  if (run.blockedReason === "workflowSourceChanged") {
    lines.push(sourceChangedLine(run.runId, status.sourceChanges ?? []));
  }
  if (run.blockedReason === "effectAmbiguous") {
    lines.push(...blockedEffectResolveLines(run, attempts, run.runId));
  } else if (!run.blockedReason) lines.push(...endedEffectResolveLines(ambiguous, run.runId));
  const waiting = status.waiting;
  if (waiting) {
    lines.push(`Waiting: ${waiting.kind} ${waiting.nodeId} (answer with /workflow answer)`);
  }
  return lines.join("\n");
}

/**
 * The way on from a run parked on a changed source, as `status` in the CLI gives it: a gone
 * built-in cannot be accepted as it is (the host cannot load it), so `--accept-source` is offered
 * only where it would work.
 */
function sourceChangedLine(
  runId: string,
  changes: readonly { source?: string; reason: string; root?: boolean }[],
): string {
  switch (sourceWayOn(changes)) {
    case "rootGone":
      return `Its workflow is a built-in this version of pi-workflows no longer has: end the run with /workflow cancel ${runId}, or resume it under a version that has it`;
    case "includeGone":
      return `Its workflow file includes ${
        goneIncludes(changes)
      }, which this version of pi-workflows no longer has: remove the include, then /workflow resume ${runId} --accept-source; or resume it under a version that has it; or /workflow cancel ${runId}`;
    case "builtin":
      return `A built-in workflow it uses changed with this version of pi-workflows: go on with it with /workflow resume ${runId} --accept-source, or /workflow cancel ${runId}`;
    default:
      return `Its workflow file changed since it started: go on with the file as it is now with /workflow resume ${runId} --accept-source, or restore the file and /workflow resume`;
  }
}

export type ControlAction = "pause" | "resume" | "cancel";

export async function controlRun(
  session: WorkflowSession,
  action: ControlAction,
  runId: string | null | undefined,
  requestId?: string,
  /** `resume` only: re-pin a run parked `workflowSourceChanged` to the file as it is now. */
  acceptSource = false,
): Promise<string> {
  session.link();
  const id = resolveRunId(session, runId);
  if (action === "resume" && !acceptSource && session.presenter.heldRunId === id) {
    // Escape held this session's step; the run itself goes on waiting for it, so the host has
    // nothing to resume unless the run was also paused or blocked: lifting the hold is the
    // resume the notice promised.
    const status = await session.client.call("run.status", { runId: id });
    if (!status.run.paused && !status.run.blockedReason) {
      session.presenter.resumeHeld();
      void session.sync();
      return runLine(status.run);
    }
  }
  const operation = action === "pause"
    ? "run.pause"
    : action === "resume"
    ? "run.resume"
    : "run.cancel";
  const receipt = acceptSource
    ? await session.client.call("run.resume", {
      runId: id,
      requestId,
      payload: { acceptSource: true, operator: operatorName() },
    })
    : await session.client.call(operation, { runId: id, requestId });
  if (action === "resume") session.presenter.resumeHeld();
  void session.sync();
  const accepted = acceptSource ? " (on the workflow file as it is now)" : "";
  return `${runLine(receipt.run)}${accepted}`;
}

/**
 * Answers what the run waits for. A protected human decision takes a person's answer only
 * (`fromModel` refuses it); an ordinary checkpoint takes either.
 */
export async function answerRun(
  session: WorkflowSession,
  options: {
    runId: string | null | undefined;
    /** What a person typed (`/workflow answer`), mapped like the CLI's `answer`. */
    text?: string;
    /** The tool's answer, as given. */
    answer?: JsonValue;
    fromModel: boolean;
    requestId?: string;
  },
): Promise<string> {
  session.link();
  const id = resolveRunId(session, options.runId);
  const status = await session.client.call("run.status", { runId: id });
  const waiting = status.waiting;
  if (!waiting) {
    const state = status.run.state.replace("_", " ");
    throw new Error(`Run ${id} is not waiting for an answer (it is ${state})`);
  }
  if (waiting.kind === "humanDecision" && options.fromModel) {
    throw new Error(
      `Step ${waiting.nodeId} is a protected human decision: only a person can answer it, ` +
        "with /workflow answer. Tell the user it is waiting for them.",
    );
  }
  const answer = options.text !== undefined
    ? answerFromText(waiting, options.text)
    : options.answer ?? null;
  const payload = { nodeId: waiting.nodeId, attemptId: waiting.attemptId, answer };
  if (waiting.kind === "humanDecision") {
    await session.client.call("decision.answer", {
      runId: id,
      requestId: options.requestId,
      payload,
    });
  } else {
    await session.client.call("checkpoint.answer", {
      runId: id,
      requestId: options.requestId,
      payload,
    });
  }
  void session.sync();
  const what = waiting.kind === "humanDecision" ? "decision" : "checkpoint";
  return `Answered ${what} ${waiting.nodeId} of run ${id}`;
}

function clip(text: string, max = 2_000): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
