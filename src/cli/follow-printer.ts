/**
 * What `start --wait` prints while it follows a run. Piped, it writes plain lines:
 *
 *   ▶ echo · echo through a real process      a node starts (with its statusDetail)
 *     · echo progress 3/10 files 30% · 2.1/s · ETA 3s      at most one line a second per key
 *   ✓ echo  38ms                              a node ends, with its elapsed time
 *   ◆ approval answered (checkpoint)          between steps: answers, blocks, interruptions,
 *   ↺ review runs again (visit 2): ...        resumes, and why a node runs again
 *                                             (follow-history.ts)
 *
 * On a TTY the running node is one line redrawn in place (elapsed time, latest progress with a
 * bar) and only finished nodes stay on screen. The end is one summary line: state, short id,
 * workflow, nodes and duration, then the output, the error, or the command that moves it on.
 */
import { formatRunSpend } from "../protocol/budget.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import type { DefinitionSnapshot } from "../protocol/definition-snapshot.ts";
import { progressFields } from "../protocol/progress-fields.ts";
import { rejectionsText, type SubmissionTally } from "../protocol/submissions.ts";
import type { AttemptSummary, RunEvent, RunSummary } from "../protocol/run-operations.ts";
import { type CliStyle, type GlyphName, PLAIN_STYLE, stripAnsi, type Tone } from "./cli-style.ts";
import { formatValue } from "./format-run.ts";
import type { CliIo } from "./output.ts";
import { ProgressTrack } from "./progress-text.ts";
import { shortRunId } from "./run-ids.ts";
import { describeRunState } from "./run-state.ts";
import { duration } from "./time-text.ts";
import {
  againLine,
  answeredLine,
  blockedLine,
  interruptionReason,
  type LastOutcome,
  resumedLine,
} from "./follow-history.ts";

/** A failed node's line shows this much of its error message (the summary shows it all). */
const NODE_ERROR_CHARS = 160;
/** Plain lines repeat an update of the same key at most this often. */
const PLAIN_UPDATE_INTERVAL_MS = 1000;

interface OpenNode {
  nodeId: string;
  attemptId: string | undefined;
  startedAt: number;
  /** Progress per update key, and the latest update of any other type. */
  progress: Map<string, ProgressTrack>;
  latest: string | null;
  /** The last line the step printed; the one a plain line showed last, and when. */
  output: string | null;
  outputShown: string | null;
  outputShownAt: number | null;
}

export interface FollowPrinter {
  /** The run's graph, for the nodes' status details (once, when known). */
  definition(snapshot: DefinitionSnapshot | undefined): void;
  /** `attempts`: the run's latest attempts, for the error message of a node that failed. */
  events(events: readonly RunEvent[], attempts?: readonly AttemptSummary[]): void;
  /** The last line the running step printed (`run.status` lastOutput), when it has one. */
  output(last: { attemptId: string; line: string } | undefined): void;
  /** Redraws the live line (a TTY's elapsed time moves on between events). */
  tick(now: number): void;
  /** The summary once the run stopped moving. */
  finish(
    run: RunSummary,
    status: { attempts?: readonly AttemptSummary[]; waiting?: Waiting },
  ): void;
}

export function createFollowPrinter(io: CliIo, clock: () => number = Date.now): FollowPrinter {
  const style = io.style ?? PLAIN_STYLE;
  const live = style.terminal.tty && io.write !== undefined;
  const details = new Map<string, string>();
  let errors = new Map<string, string>();
  let tallies = new Map<string, SubmissionTally>();
  let open: OpenNode | null = null;
  const lastPlain = new Map<string, number>();
  /** Per node: starts seen and how its latest attempt ended; which node each attempt is. */
  const visits = new Map<string, { count: number; last?: LastOutcome }>();
  const attemptNodes = new Map<string, string>();
  const ended = (nodeId: string, last: LastOutcome) => {
    const seen = visits.get(nodeId);
    if (seen) seen.last = last;
  };
  let shown = "";

  const glyph = (name: GlyphName, tone: Tone) => style.paint(tone, style.glyph(name));
  const node = (id: string) => {
    const detail = details.get(id);
    return detail ? `${id} ${style.paint("muted", `${style.glyph("separator")} ${detail}`)}` : id;
  };

  /** A line that stays: on a TTY the live line is cleared first and drawn again after. */
  const line = (text: string) => {
    if (live && shown !== "") io.write!("\r\x1b[2K");
    io.out(style.text(text));
    shown = "";
    if (live) redraw(clock());
  };

  const redraw = (now: number) => {
    if (!live) return;
    const text = open ? liveText(open, now) : "";
    if (text === shown) return;
    io.write!(`\r\x1b[2K${fit(text, style.terminal.columns - 1, style)}`);
    shown = text;
  };

  const liveText = (o: OpenNode, now: number) => {
    const parts = [`${glyph("running", "running")} ${node(o.nodeId)}`, duration(now - o.startedAt)];
    const progress = [...o.progress.values()].at(-1);
    if (progress) parts.push(progress.text(style, { bar: true, now }));
    else if (o.latest) parts.push(o.latest);
    else if (o.output) parts.push(style.paint("muted", `${style.glyph("output")} ${o.output}`));
    return style.text(parts.join("  "));
  };

  /** A model step's usage on its closing line: `  · 1.2k tokens, $0.0031`. */
  const used = (data: Record<string, unknown>) => {
    const text = spendText(data.usage);
    return text ? `  ${style.paint("muted", `${style.glyph("separator")} ${text}`)}` : "";
  };

  /** A model step's rejected submissions on its closing line: `  · 2 of 3 submissions rejected`. */
  const rejected = (event: RunEvent) => {
    const tally = tallies.get(String(event.attemptId ?? ""));
    const text = tally ? rejectionsText(tally) : "";
    return text ? `  ${style.paint("warn", `${style.glyph("separator")} ${text}`)}` : "";
  };

  const elapsed = (at: number) =>
    open && open.startedAt <= at ? `  ${style.paint("muted", duration(at - open.startedAt))}` : "";

  const onEvent = (event: RunEvent) => {
    const id = event.nodeId ?? open?.nodeId ?? "";
    const data = (event.data ?? {}) as Record<string, unknown>;
    switch (event.type) {
      case "node.started": {
        const seen = visits.get(id) ?? { count: 0 };
        seen.count++;
        visits.set(id, seen);
        if (event.attemptId) attemptNodes.set(event.attemptId, id);
        if (seen.count > 1) line(againLine(id, seen.count, seen.last, style));
        open = {
          nodeId: id,
          attemptId: event.attemptId,
          startedAt: event.at,
          progress: new Map(),
          latest: null,
          output: null,
          outputShown: null,
          outputShownAt: null,
        };
        if (!live) line(`${glyph("started", "bold")} ${node(id)}`);
        else redraw(event.at);
        return;
      }
      // An interactive step ends when its submission is accepted (or its reminders ran out):
      // its line shows what it used, as a headless step's does.
      case "interaction.accepted":
      case "node.finished": {
        ended(id, "ok");
        closed(`${glyph("ok", "ok")} ${id}${elapsed(event.at)}${used(data)}${rejected(event)}`);
        // It succeeded in the end; what was rejected on the way still matters to its author.
        const last = tallies.get(String(event.attemptId))?.lastRejection;
        if (rejected(event) && last) {
          line(`    last rejection: ${clip(last, NODE_ERROR_CHARS, style)}`);
        }
        return;
      }
      case "node.submissions": {
        const tally = tallies.get(String(event.attemptId));
        const text = rejectionsText({
          submitted: Number(data.submitted ?? 0),
          rejected: Number(data.rejected ?? 0),
        });
        if (!text) return;
        if (open) open.latest = text;
        if (live) return redraw(event.at);
        const last = tally?.lastRejection
          ? `: ${clip(tally.lastRejection, NODE_ERROR_CHARS, style)}`
          : "";
        return line(`  ${style.glyph("update")} ${id} ${text}${last}`);
      }
      case "node.usage":
        // A recovered submission count alone carries no usage.
        if (open && data.usage !== undefined) open.latest = spendText(data.usage);
        return redraw(event.at);
      case "interaction.failed":
      case "node.failed": {
        // The message says why, which matters most when the workflow routes on and the run's
        // own summary never shows it; the event carries the code only.
        const why = errors.get(String(event.attemptId ?? data.attemptId));
        ended(id, data.outcome === "timed_out" ? "timed out" : "failed");
        const code = typeof data.code === "string"
          ? `: ${data.code}${why ? `: ${clip(why, NODE_ERROR_CHARS, style)}` : ""}`
          : "";
        return closed(
          data.outcome === "timed_out"
            ? `${glyph("timedOut", "failed")} ${id} timed out${elapsed(event.at)}${used(data)}${
              rejected(event)
            }${code}`
            : `${glyph("failed", "failed")} ${id}${elapsed(event.at)}${used(data)}${
              rejected(event)
            }${code}`,
        );
      }
      case "node.timed_out":
        ended(id, "timed out");
        return closed(`${glyph("timedOut", "failed")} ${id} timed out${elapsed(event.at)}`);
      case "node.update":
        return onUpdate(event, id, data);
      case "run.resumed":
        return line(resumedLine(data, style));
      case "run.answered":
        return line(answeredLine(event.nodeId, data, style));
      case "run.blocked":
        // A block ends the following (the summary says what moves it on); one that was lifted
        // meanwhile (status --wait reads the run from its start) shows here.
        return line(blockedLine(data.reason, style));
      case "run.interrupted":
      case "run.recovered":
        return interrupted(event, data);
        // Waiting and paused end the following: the summary says them.
    }
  };

  /** Piped: the running step's newest output line, at most one a second, like updates. */
  const plainOutput = (now: number) => {
    if (!open || open.output === null || open.output === open.outputShown) return;
    if (open.outputShownAt !== null && now - open.outputShownAt < PLAIN_UPDATE_INTERVAL_MS) return;
    open.outputShown = open.output;
    open.outputShownAt = now;
    line(`  ${style.glyph("output")} ${open.nodeId}: ${open.output}`);
  };

  /** The worker stopped under a step: it runs again from its start (or the run is blocked). */
  const interrupted = (event: RunEvent, data: Record<string, unknown>) => {
    const reason = interruptionReason(event.type, data);
    const attemptId = typeof data.interruptedAttemptId === "string"
      ? data.interruptedAttemptId
      : null;
    const nodeId = attemptId ? attemptNodes.get(attemptId) : undefined;
    if (nodeId) ended(nodeId, { interrupted: reason });
    const text = `${glyph("interrupted", "warn")} ${nodeId ?? "run"} interrupted: ${reason}`;
    if (open && nodeId === open.nodeId) closed(text);
    else line(text);
    if (data.blocked === true) line(blockedLine("effectAmbiguous", style));
  };

  /** The open node ended: its line replaces the live one. */
  const closed = (text: string) => {
    open = null;
    line(text);
  };

  const onUpdate = (event: RunEvent, id: string, data: Record<string, unknown>) => {
    const type = typeof data.type === "string" ? data.type : "update";
    const key = typeof data.key === "string" ? data.key : "";
    const progress = type === "progress" ? progressFields(data.progress as never) : null;
    let text: string;
    let final = false;
    if (progress && open) {
      const track = open.progress.get(key) ?? new ProgressTrack();
      // Map order is insertion order: the key updated last is drawn.
      open.progress.delete(key);
      open.progress.set(key, track);
      track.add(event.at, progress);
      text = track.text(style, { now: event.at });
      final = track.done;
    } else {
      text = `${type}${key ? ` ${key}` : ""}`;
      if (open) open.latest = text;
    }
    if (live && progress) return redraw(event.at);
    const throttle = `${id}\u0000${type}\u0000${key}`;
    const last = lastPlain.get(throttle);
    if (!final && last !== undefined && event.at - last < PLAIN_UPDATE_INTERVAL_MS) {
      return live ? redraw(event.at) : undefined;
    }
    lastPlain.set(throttle, event.at);
    line(`  ${style.glyph("update")} ${id} ${text}`);
  };

  return {
    definition(snapshot) {
      for (const [id, n] of Object.entries(snapshot?.nodes ?? {})) {
        if (typeof n.statusDetail === "string" && n.statusDetail !== "") {
          details.set(id, n.statusDetail);
        }
      }
    },
    events(events, attempts) {
      errors = new Map(
        (attempts ?? []).flatMap((a) => a.error ? [[a.attemptId, a.error.message]] : []),
      );
      tallies = new Map(
        (attempts ?? []).flatMap((a) => a.submissions ? [[a.attemptId, a.submissions]] : []),
      );
      for (const event of events) onEvent(event);
    },
    output(last) {
      if (!open || !last || last.attemptId !== open.attemptId || last.line === open.output) return;
      open.output = last.line;
      if (live) return redraw(clock());
      plainOutput(clock());
    },
    tick(now) {
      redraw(now);
      if (!live) plainOutput(now);
    },
    finish(run, status) {
      if (live && shown !== "") io.write!("\r\x1b[2K");
      shown = "";
      open = null;
      for (const text of summaryLines(run, status, style)) io.out(text);
    },
  };
}

/** `✓ completed  run-1a2b3c4d  hello · 3 nodes · 1.4s`, then the output, error or next step. */
export function summaryLines(
  run: RunSummary,
  status: { attempts?: readonly AttemptSummary[]; waiting?: Waiting },
  style: CliStyle = PLAIN_STYLE,
): string[] {
  const state = describeRunState(run, status);
  const attempts = status.attempts ?? [];
  const nodes = new Set(attempts.map((a) => a.nodeId)).size;
  const sep = ` ${style.glyph("separator")} `;
  const counted = `${nodes} node${nodes === 1 ? "" : "s"}${
    attempts.length > nodes ? ` (${attempts.length} attempts)` : ""
  }`;
  const head = `${style.paint(state.tone, `${style.glyph(state.glyph)} ${state.word}`)}  ${
    shortRunId(run.runId)
  }  ${run.workflowName}${sep}${counted}${sep}${duration(run.updatedAt - run.createdAt)}${
    run.spend ? `${sep}${formatRunSpend(run.spend, run.budget)}` : ""
  }`;
  const lines = [style.text(head)];
  if (run.error) lines.push(style.text(`error: ${run.error.code}: ${run.error.message}`));
  if (state.reason) lines.push(style.text(`why: ${state.reason}`));
  if (state.next) {
    const see = run.state === "waiting" && status.waiting
      ? ` (what it asks: pi-workflows status ${shortRunId(run.runId)})`
      : "";
    lines.push(style.text(`next: ${state.next}${see}`));
  }
  // The output is data: printed as it is.
  if (run.state === "completed" && run.output !== undefined) lines.push(formatValue(run.output));
  return lines;
}

/** An event's usage sums as text (`1.2k tokens, $0.0031`); "" when it has none. */
function spendText(value: unknown): string {
  const sums = value as { tokens?: unknown; cost?: unknown } | undefined;
  if (typeof sums?.tokens !== "number") return "";
  return formatRunSpend({
    tokens: sums.tokens,
    cost: typeof sums.cost === "number" ? sums.cost : null,
  }, undefined);
}

/** Cuts a (possibly coloured) line to `width` visible columns. */
function fit(text: string, width: number, style: CliStyle): string {
  const plain = [...stripAnsi(text)];
  if (plain.length <= width) return text;
  // Colour is dropped from a line that must be cut: cutting inside an escape breaks it.
  const ellipsis = style.glyph("ellipsis");
  return plain.slice(0, Math.max(0, width - ellipsis.length)).join("") + ellipsis;
}

function clip(text: string, max: number, style: CliStyle): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}${style.glyph("ellipsis")}`;
}
