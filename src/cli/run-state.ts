/**
 * A run's state as a person reads it, and the one command that moves it on. The host's states
 * are precise but not what a person asks ("is it stuck? on whom?"): a run that is `running` in
 * the run table may be parked for review, paused, or waiting for someone. This turns the run
 * summary (plus what `run.status` says it waits for, when known) into:
 *
 *   queued | running | waiting for <who> | paused | blocked | completed | failed | timed out |
 *   cancelled
 *
 * where <who> is a human decision's audience (default `owner`), `answer` for a checkpoint, or
 * `Pi session` for a model step that runs in the Pi session that started the run.
 */
import type { Waiting } from "../protocol/decision-request.ts";
import type { AttemptSummary, RunSummary } from "../protocol/run-operations.ts";
import type { GlyphName, Tone } from "./cli-style.ts";
import { effectResolveCommand } from "../render/effect-resolve-text.ts";
import { shortRunId } from "./run-ids.ts";
import { sourceWayOn } from "../base/source-change-text.ts";

export interface RunStateContext {
  /** What the run waits for (`run.status`'s `waiting`), when known. */
  waiting?: Waiting;
  /** Its attempts, when known (tells an interactive step from a checkpoint). */
  attempts?: readonly AttemptSummary[];
  /** A run blocked `workflowSourceChanged`: what differs (`run.status`'s), when known. */
  sourceChanges?: readonly { reason: string; root?: boolean }[];
}

export interface RunStateView {
  /** `waiting for owner`, `blocked`, `completed`, ... */
  word: string;
  glyph: GlyphName;
  tone: Tone;
  /** Why, when the word does not say it (`the workflow source changed`); else null. */
  reason: string | null;
  /** The one command that moves the run on; null when it moves by itself or has ended. */
  next: string | null;
}

/** Node kinds whose step runs in the origin Pi session of an interactive run. */
const PI_SESSION_KINDS = new Set(["agent", "decision", "assistantMessage"]);

export function describeRunState(run: RunSummary, context: RunStateContext = {}): RunStateView {
  const id = shortRunId(run.runId);
  if (run.blockedReason) return blocked(run, run.blockedReason, id, context);
  if (run.paused && !isFinished(run.state)) {
    return state("paused", "paused", "warn", null, `pi-workflows resume ${id}`);
  }
  switch (run.state) {
    case "queued":
      return state("queued", "queued", "muted", null, null);
    case "running":
      return state("running", "running", "running", null, null);
    case "waiting":
      return waiting(run, id, context);
    case "completed":
      return state("completed", "ok", "ok", null, null);
    case "cancelled":
      return state("cancelled", "cancelled", "warn", null, null);
    case "timed_out":
      return failed("timed out", "timedOut", id, context);
    default:
      return failed(run.state, "failed", id, context);
  }
}

/**
 * A run that failed or timed out in a node (its last attempt did) goes on from that node once
 * the workflow (or the Pi setup, for a step Pi could not run) is fixed: `retry` (the host refuses it for a run that failed outside a node, so it
 * is offered only when the attempts say where). Unknown attempts (`list`): no command.
 */
function failed(word: string, glyph: GlyphName, id: string, context: RunStateContext) {
  const last = context.attempts?.reduce<AttemptSummary | undefined>(
    (latest, a) => (latest === undefined || a.sequence > latest.sequence ? a : latest),
    undefined,
  );
  if (last?.state !== "failed" && last?.state !== "timed_out") {
    return state(word, glyph, "failed", null, null);
  }
  const how = last.state === "failed" ? "failed" : "timed out";
  const code = last.error?.code;
  // A step Pi could not run (no provider key or login, no model, a Pi that exits) fails with a
  // workflow that is fine: "fix the workflow" would send the user to the wrong file.
  const fix = code !== undefined && PI_SIDE_FAILURES.has(code)
    ? ` in Pi (${code}), not in the workflow: fix what the error says (a provider key or ` +
      "login, the model, the pi command)"
    : ": fix the workflow";
  return state(
    word,
    glyph,
    "failed",
    `step ${last.nodeId} ${how}${fix}, then go on from that ` +
      "step (the steps before it are not run again)",
    `pi-workflows retry ${id}`,
  );
}

/** A headless step's failures that come from the Pi it runs in, not from the workflow. */
const PI_SIDE_FAILURES = new Set(["piPromptRefused", "piExited", "piUnavailable"]);

export function isFinished(state: RunSummary["state"]): boolean {
  return state === "completed" || state === "failed" || state === "timed_out" ||
    state === "cancelled";
}

function waiting(run: RunSummary, id: string, context: RunStateContext): RunStateView {
  const asked = context.waiting;
  if (asked?.kind === "humanDecision") {
    const who = asked.decision?.audience || "owner";
    const choices = Object.keys(asked.decision?.choices ?? {});
    const answer = choices.length > 0 ? choices.join("|") : "<choice>";
    return state(
      `waiting for ${who}`,
      "waiting",
      "waiting",
      null,
      `pi-workflows answer ${id} ${answer}`,
    );
  }
  if (asked?.kind === "checkpoint") {
    return state(
      "waiting for answer",
      "waiting",
      "waiting",
      null,
      `pi-workflows answer ${id} '<json or text>'`,
    );
  }
  const open = context.attempts?.findLast((a) => a.state === "waiting");
  if (run.executionMode === "interactive" && open && PI_SESSION_KINDS.has(open.nodeKind)) {
    return state(
      "waiting for Pi session",
      "waiting",
      "waiting",
      `step ${open.nodeId} runs in the Pi session that started the run`,
      null,
    );
  }
  // What it waits for is not known here (`list` reads it only for a few runs).
  return state("waiting", "waiting", "waiting", null, `pi-workflows status ${id}`);
}

function blocked(
  run: RunSummary,
  reason: string,
  id: string,
  context: RunStateContext,
): RunStateView {
  switch (reason) {
    case "workflowSourceChanged": {
      const way = sourceWayOn(context.sourceChanges ?? []);
      // The run's own built-in is gone: nothing to accept (the host cannot load it) or restore.
      if (way === "rootGone") {
        return state(
          "blocked",
          "blocked",
          "warn",
          "pi-workflows was updated since it started, and this version no longer has its " +
            "built-in workflow: cancel the run, or resume it under a version that has it",
          `pi-workflows cancel ${id}`,
        );
      }
      // A built-in its project workflow includes is gone: the file does not load until the
      // include is removed, so --accept-source alone would fail.
      if (way === "includeGone") {
        return state(
          "blocked",
          "blocked",
          "warn",
          "pi-workflows was updated since it started, and this version no longer has a built-in " +
            "workflow it includes: remove the include from the workflow file and accept it, " +
            "resume it under a version that has it, or cancel the run",
          `pi-workflows resume ${id} --accept-source`,
        );
      }
      return state(
        "blocked",
        "blocked",
        "warn",
        // A built-in changed with the package: there is no file to restore.
        way === "builtin"
          ? "pi-workflows was updated since it started, and a built-in workflow it runs changed " +
            "with it; a built-in cannot be restored: go on with this version's, or cancel the run"
          : "its workflow source changed since it started; go on with the files as they are " +
            "now, or restore them and resume it without --accept-source",
        `pi-workflows resume ${id} --accept-source`,
      );
    }
    case "effectAmbiguous": {
      // The operator's verdict on the interrupted attempt moves it on (a plain resume is
      // refused); without the attempts at hand, `status` shows the exact commands.
      const attempt = context.attempts?.at(-1)?.attemptId;
      return state(
        "blocked",
        "blocked",
        "warn",
        "an external action may have applied without a receipt; check it, then record what happened",
        attempt
          ? `${effectResolveCommand(id, attempt)} --applied JSON|--not-applied|--retry`
          : `pi-workflows status ${id}`,
      );
    }
    case "budgetExceeded": {
      // The stop names the budget: the run's own, or its controller's total over its children
      // (which `budget --raise` on any child raises).
      const flags = raiseFlags(run);
      return state(
        "over budget",
        "blocked",
        "warn",
        `${run.budgetStop ?? "its spend reached its budget"}: a person raises the budget or ` +
          "cancels the run",
        flags ? `pi-workflows budget ${id} ${flags}` : `pi-workflows status ${id}`,
      );
    }
    default:
      return state("blocked", "blocked", "warn", reason, `pi-workflows status ${id}`);
  }
}

/**
 * The flags that raise the limits the host says stopped the run (`budgetRaise`): its own or its
 * controller's total, which `budget --raise` on a child raises too (a limit neither has cannot be
 * raised).
 */
function raiseFlags(run: RunSummary): string {
  const limits = run.budgetRaise ?? [];
  return [
    limits.includes("maxCostUsd") ? "--raise <USD>" : "",
    limits.includes("maxTokens") ? "--raise-tokens <N>" : "",
  ].filter(Boolean).join(" ");
}

function state(
  word: string,
  glyph: GlyphName,
  tone: Tone,
  reason: string | null,
  next: string | null,
): RunStateView {
  return { word, glyph, tone, reason, next };
}
