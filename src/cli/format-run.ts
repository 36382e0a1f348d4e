/** Plain-text views of runs for people: one run, a list of runs, and the one-line headline. */
import { canonicalJson } from "../protocol/canonical-json.ts";
import {
  ambiguousEffectLines,
  blockedEffectResolveLines,
  endedEffectResolveLines,
} from "../render/effect-resolve-text.ts";
import type {
  AmbiguousEffectSummary,
  AttemptSummary,
  RunPi,
  RunSummary,
  UpdateSummary,
} from "../protocol/run-operations.ts";
import { formatRunSpend } from "../protocol/budget.ts";
import { formatCost, formatTokens, formatUsageDetail } from "../protocol/step-usage.ts";
import { rejectionsText, type SubmissionTally } from "../protocol/submissions.ts";
import { type CliStyle, type GlyphName, PLAIN_STYLE, stripAnsi, type Tone } from "./cli-style.ts";
import { describeRunState, type RunStateContext } from "./run-state.ts";
import { shortRunId } from "./run-ids.ts";
import { duration, relative, when } from "./time-text.ts";
import { goneIncludes, sourceChangeWords, sourceWayOn } from "../base/source-change-text.ts";

const MAX_VALUE_CHARS = 2000;

export interface RunTextOptions {
  style?: CliStyle;
  now?: number;
}

export interface RunStatusTextOptions extends RunTextOptions, RunStateContext {
  /** Effects that may have applied without a receipt (`run.status`'s `ambiguousEffects`). */
  ambiguous?: readonly AmbiguousEffectSummary[];
  /** The latest updates (`run.status` with `includeUpdates`). */
  updates?: readonly UpdateSummary[];
  /** How many attempts the run has, when more than `attempts` holds (the last ones). */
  attemptCount?: number;
  /**
   * A headless run's Pi: what it loads and its session file (`run.status`'s `pi`), and whether
   * that file exists yet (unknown: shown).
   */
  pi?: RunPi & { sessionStarted?: boolean };
  /** A run blocked `workflowSourceChanged`: the files that differ (`run.status`'s). */
  sourceChanges?: readonly SourceChangeSummary[];
}

/** One file (or built-in) of a run's workflow source that differs from what it started with. */
export interface SourceChangeSummary {
  source: string;
  reason: string;
  recorded?: string;
  current?: string | null;
  /** The run's own workflow (not a file or built-in it mounted). */
  root?: boolean;
}

/** `run-1a2b3c4d  hello — Say hello to Ada  ▶ queued`: the run a command just acted on. */
export function formatRunHeadline(run: RunSummary, options: RunTextOptions = {}): string {
  const style = options.style ?? PLAIN_STYLE;
  const state = describeRunState(run);
  const title = run.title ? ` ${style.glyph("dash")} ${run.title}` : "";
  return style.text(
    `${shortRunId(run.runId)}  ${run.workflowName}${title}  ${style.paint(state.tone, state.word)}`,
  );
}

/** `status`: the run, what it waits for or why it is stuck, the command that moves it on. */
export function formatRun(
  run: RunSummary,
  attempts: readonly AttemptSummary[] = [],
  options: RunStatusTextOptions = {},
): string {
  const style = options.style ?? PLAIN_STYLE;
  const now = options.now ?? Date.now();
  const state = describeRunState(run, {
    waiting: options.waiting,
    attempts,
    sourceChanges: options.sourceChanges,
  });
  const lines = [
    `run ${run.runId}`,
    `workflow: ${run.workflowName}${run.title ? ` ${style.glyph("dash")} ${run.title}` : ""}`,
    `state: ${
      style.paint(state.tone, `${style.glyph(state.glyph)} ${state.word}`)
    } (queue ${run.queueState})`,
  ];
  if (run.forkedFrom) {
    lines.push(`forked from ${run.forkedFrom.runId} at ${run.forkedFrom.nodeId}`);
  }
  if (state.reason) lines.push(`why: ${state.reason}`);
  lines.push(...sourceChangeLines(run, options.sourceChanges ?? []));
  // A waiting run's section (format-waiting.ts) ends with the exact command to answer it.
  if (state.next && !options.waiting) lines.push(`next: ${state.next}`);
  lines.push(
    `revision: ${run.revision}`,
    `mode: ${run.executionMode}`,
    ...piLines(options.pi),
    ...(run.spend ? [`spend: ${formatRunSpend(run.spend, run.budget)}`] : []),
    `created: ${when(run.createdAt, now)}`,
    `updated: ${when(run.updatedAt, now)}`,
  );
  if (attempts.length > 0) {
    const count = options.attemptCount ?? attempts.length;
    lines.push(
      count > attempts.length
        ? `nodes (the last ${attempts.length} of ${count} attempts; --attempts all shows every one):`
        : "nodes:",
    );
    const width = Math.max(...attempts.map((a) => a.nodeId.length));
    for (const attempt of attempts) {
      lines.push(`  ${formatAttempt(attempt, width, style, now)}`);
      for (const member of attempt.usage?.members ?? []) {
        lines.push(`      ${member.id}: ${formatUsageDetail(member)}`);
      }
      const rejected = attempt.submissions ? rejectionLine(attempt.submissions) : "";
      if (rejected) lines.push(`      ${rejected}`);
    }
  }
  const updates = options.updates ?? [];
  if (updates.length > 0) {
    lines.push("updates (latest first):");
    for (const u of updates) {
      const key = u.key ? ` ${u.key}` : "";
      const data = formatValue(u.data, style);
      lines.push(
        `  ${u.nodeId} ${u.type}${key}: ${
          data.length > 200 ? `${data.slice(0, 200)}${style.glyph("ellipsis")}` : data
        }`,
      );
    }
  }
  if (run.error) lines.push(`error: ${run.error.code}: ${run.error.message}`);
  lines.push(...formatAmbiguous(run, attempts, options.ambiguous ?? []));
  const text = style.text(lines.join("\n"));
  // The output is data: shown as it is, whatever the locale.
  return run.output === undefined ? text : `${text}\noutput: ${formatValue(run.output, style)}`;
}

/**
 * What a headless run's Pi loads, and how to open the run's conversation in Pi: its session file
 * once an agent step started it (`pi.sessionStarted`, which the caller checks on disk); before,
 * a command to open a file that does not exist would only fail.
 */
function piLines(pi: (RunPi & { sessionStarted?: boolean }) | undefined): string[] {
  if (pi === undefined) return [];
  return [
    `pi loads: ${
      pi.context === "project" ? "context files and skills (--project-context)" : "nothing ambient"
    }`,
    pi.sessionStarted === false
      ? "pi session: none yet (no agent step of the run has started)"
      : `pi session: ${pi.sessionFile} (open it with: pi --session ${shellWord(pi.sessionFile)})`,
  ];
}

/** A path as one shell word (quoted when it needs to be). */
function shellWord(text: string): string {
  return /^[A-Za-z0-9_./@%+=:,-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * What may have applied without a receipt and, for a run blocked on it, the exact commands that
 * record the operator's verdict (a plain resume is refused).
 */
function formatAmbiguous(
  run: RunSummary,
  attempts: readonly AttemptSummary[],
  ambiguous: readonly AmbiguousEffectSummary[],
): string[] {
  const id = shortRunId(run.runId);
  const lines = ambiguousEffectLines(ambiguous);
  if (run.blockedReason === "effectAmbiguous") {
    lines.push(...blockedEffectResolveLines(run, attempts, id));
  } else if (run.blockedReason === "credentialsMissing") {
    lines.push(
      "the host restarted and no longer holds the provider keys this run was started with (it",
      "keeps them in memory only); resume it from a shell that has them:",
      `  pi-workflows resume ${run.runId}`,
      "(resuming from a shell without them lets Pi use its own login, auth.json)",
    );
  } else lines.push(...endedEffectResolveLines(ambiguous, id));
  return lines;
}

const ATTEMPT_LOOKS: Record<AttemptSummary["state"], { glyph: GlyphName; tone: Tone }> = {
  running: { glyph: "running", tone: "running" },
  waiting: { glyph: "waiting", tone: "waiting" },
  ok: { glyph: "ok", tone: "ok" },
  failed: { glyph: "failed", tone: "failed" },
  timed_out: { glyph: "timedOut", tone: "failed" },
  cancelled: { glyph: "cancelled", tone: "warn" },
  interrupted: { glyph: "interrupted", tone: "warn" },
};

/** `✓ greet  compute  ok  12ms`, with the error of a failed attempt. */
function formatAttempt(
  attempt: AttemptSummary,
  width: number,
  style: CliStyle,
  now: number,
): string {
  const look = ATTEMPT_LOOKS[attempt.state];
  const took = attempt.finishedAt !== undefined
    ? duration(attempt.finishedAt - attempt.startedAt)
    : `${duration(now - attempt.startedAt)} so far`;
  const word = attempt.state === "timed_out" ? "timed out" : attempt.state;
  const used = attempt.usage ? `, ${formatUsageDetail(attempt.usage)}` : "";
  const error = attempt.error ? `: ${attempt.error.message}` : "";
  // A fork's adopted step ran in the parent run; it was not run again.
  const adopted = attempt.adoptedFrom ? " (adopted from the parent run)" : "";
  return `${style.paint(look.tone, style.glyph(look.glyph))} ${
    attempt.nodeId.padEnd(width)
  }  ${attempt.nodeKind}, ${word}, ${took}${used}${error}${adopted}`;
}

/**
 * `2 of 3 submissions rejected, the last: Output rejected: ...` under a model step whose
 * submissions were rejected (also when a later one was accepted); "" when none was.
 */
export function rejectionLine(tally: SubmissionTally): string {
  const counted = rejectionsText(tally);
  if (!counted) return "";
  return tally.lastRejection ? `${counted}, the last: ${tally.lastRejection}` : counted;
}

export interface RunListOptions extends RunTextOptions {
  /** Whether finished runs were asked for (`list --all`). */
  all?: boolean;
  /** How many runs match, when more than are shown. */
  total?: number;
  /** What waiting runs wait for, by run id (read for the runs shown). */
  waiting?: ReadonlyMap<string, RunStateContext>;
}

/**
 * `list`: one line per run (state, short id, age, what it spent, workflow and title), and under a
 * run that
 * needs someone the command that moves it on. An empty list says how to see more.
 */
export function formatRunList(runs: readonly RunSummary[], options: RunListOptions = {}): string {
  const style = options.style ?? PLAIN_STYLE;
  const total = options.total ?? runs.length;
  const more = total > runs.length
    ? `Showing ${runs.length} of ${total} ${options.all ? "" : "active "}runs: ${
      options.all ? "--all without --limit shows every one" : "--limit N or --all shows more"
    }`
    : null;
  if (runs.length === 0) {
    if (more) return more;
    return options.all
      ? "No runs yet: start one with 'pi-workflows start <workflow>'"
      : "No active runs. 'pi-workflows list --all' shows finished ones too.";
  }
  const now = options.now ?? Date.now();
  const rows = runs.map((run) => {
    const state = describeRunState(run, options.waiting?.get(run.runId));
    return { run, state, age: relative(run.createdAt, now), cost: listCost(run) };
  });
  const stateWidth = Math.max(...rows.map((r) => r.state.word.length));
  const ageWidth = Math.max(...rows.map((r) => r.age.length));
  // The cost column appears once a listed run used a model.
  const costWidth = rows.some((r) => r.cost !== "-")
    ? Math.max(...rows.map((r) => r.cost.length))
    : 0;
  const lines: string[] = [];
  for (const { run, state, age, cost } of rows) {
    const mark = style.paint(
      state.tone,
      `${style.glyph(state.glyph)} ${state.word.padEnd(stateWidth)}`,
    );
    const title = run.title ? ` ${style.glyph("dash")} ${run.title}` : "";
    // The code says why at a glance: what failed, or what a blocked run waits to be told.
    const why = run.error && run.state !== "cancelled" ? run.error.code : run.blockedReason;
    const failure = why ? ` (${why})` : "";
    const fork = run.forkedFrom
      ? ` (fork of ${shortRunId(run.forkedFrom.runId)} at ${run.forkedFrom.nodeId})`
      : "";
    const spent = costWidth > 0 ? `${cost.padStart(costWidth)}  ` : "";
    const rest = `  ${shortRunId(run.runId)}  ${
      age.padStart(ageWidth)
    }  ${spent}${run.workflowName}${title}${failure}${fork}`;
    lines.push(fitLine(mark, style.text(rest), style));
    if (state.next) lines.push(fitLine("", style.text(`  next: ${state.next}`), style));
  }
  if (more) lines.push(more);
  return lines.join("\n");
}

/**
 * The cost column of `list`: `$0.42`, or the tokens when no model had a price (`12k tok`),
 * `-` for a run that used no model.
 */
function listCost(run: RunSummary): string {
  if (!run.spend || run.spend.tokens === 0) return "-";
  return run.spend.cost === null
    ? `${formatTokens(run.spend.tokens)} tok`
    : formatCost(run.spend.cost);
}

/** On a TTY a line is cut to the terminal's width; a pipe gets it whole. */
function fitLine(painted: string, plain: string, style: CliStyle): string {
  const terminal = style.terminal;
  if (!terminal.tty) return painted + plain;
  const room = terminal.columns - [...stripAnsi(painted)].length;
  const chars = [...plain];
  if (chars.length <= room) return painted + plain;
  const ellipsis = style.glyph("ellipsis");
  return painted + chars.slice(0, Math.max(0, room - ellipsis.length)).join("") + ellipsis;
}

export function formatValue(value: unknown, style: CliStyle = PLAIN_STYLE): string {
  const text = typeof value === "string" ? value : canonicalJson(value);
  return text.length > MAX_VALUE_CHARS
    ? `${text.slice(0, MAX_VALUE_CHARS)}${style.glyph("ellipsis")} (truncated)`
    : text;
}

/**
 * Under a run blocked `workflowSourceChanged`: each file that differs, in words, with its digest
 * when the run started and now, then the ways on (for a built-in, which changes with the
 * pi-workflows version, there is nothing to restore).
 */
function sourceChangeLines(run: RunSummary, changes: readonly SourceChangeSummary[]): string[] {
  if (changes.length === 0) return [];
  const short = (digest: string | null | undefined) =>
    digest === null ? "unreadable" : digest ? digest.slice(0, 19) : "?";
  const lines = ["changed since the run started:"];
  for (const c of changes) {
    const digests = c.recorded !== undefined
      ? ` (started with ${short(c.recorded)}, now ${short(c.current)})`
      : "";
    lines.push(`  ${sourceChangeWords(c)}${digests}`);
  }
  const id = shortRunId(run.runId);
  const way = sourceWayOn(changes);
  if (way === "rootGone") {
    // --accept-source would fail: the host has no such built-in to load.
    lines.push(
      `end the run: pi-workflows cancel ${id}`,
      `or resume it under a version that has this built-in: pi-workflows resume ${id}`,
    );
  } else if (way === "includeGone") {
    // --accept-source alone would fail: the workflow file's include of it does not load.
    lines.push(
      `remove the include of ${goneIncludes(changes)} from the workflow file, then: ` +
        `pi-workflows resume ${id} --accept-source`,
      `or resume it under a version that has this built-in: pi-workflows resume ${id}`,
      `or end the run: pi-workflows cancel ${id}`,
    );
  } else if (way === "builtin") {
    lines.push(
      `go on with this version of pi-workflows: pi-workflows resume ${id} --accept-source`,
      `or end the run: pi-workflows cancel ${id}`,
    );
  } else {
    lines.push(
      `go on with the files as they are now: pi-workflows resume ${id} --accept-source`,
      `or restore them and resume it: pi-workflows resume ${id}`,
    );
  }
  return lines;
}
