/**
 * What Pi shows of a run's progress: a footer status line and a widget of at most 10 lines, one
 * per node (state glyph, kind glyph, node, elapsed time, status detail, progress with an ETA,
 * what a model step used once it ended).
 * Pure: from a `run.status` answer and the time, so tests assert on the exact lines.
 */
import { estimateProgress, PROGRESS_SCHEMA, type ProgressData } from "../base/progress.ts";
import type { AttemptSummary, RunSummary, UpdateSummary } from "../protocol/run-operations.ts";
import { formatUsage } from "../protocol/step-usage.ts";

export const MAX_WIDGET_LINES = 10;

/** The latest `progress` update of an attempt (`pi-workflows.progress.v1` data). */
export interface NodeProgress {
  attemptId: string;
  completed: number;
  total?: number;
  unit?: string;
  label?: string;
  updatedAt: number;
}

export interface ProgressInput {
  run: RunSummary;
  attempts: readonly AttemptSummary[];
  /** Status details by node id (the step contract's `statusDetail` of an agent step). */
  details?: Readonly<Record<string, string | null>>;
  /** `run.status` updates (`includeUpdates`): `progress` data and `status` notes. */
  updates?: readonly UpdateSummary[];
  now: number;
}

/** The latest `progress` update of each attempt. */
export function progressOf(updates: readonly UpdateSummary[]): NodeProgress[] {
  const latest = new Map<string, NodeProgress>();
  for (const update of updates) {
    const data = update.data as Partial<ProgressData> | null;
    if (update.type !== "progress" || data?.schema !== PROGRESS_SCHEMA) continue;
    if (typeof data.completed !== "number") continue;
    const seen = latest.get(update.attemptId);
    if (seen && seen.updatedAt >= update.updatedAt) continue;
    latest.set(update.attemptId, {
      attemptId: update.attemptId,
      completed: data.completed,
      total: data.total,
      unit: data.unit,
      label: data.label,
      updatedAt: update.updatedAt,
    });
  }
  return [...latest.values()];
}

/** The latest `status` note (`data.message`) of each attempt, e.g. the model's `update` call. */
export function notesOf(updates: readonly UpdateSummary[]): Map<string, string> {
  const latest = new Map<string, { text: string; at: number }>();
  for (const update of updates) {
    const message = (update.data as { message?: unknown } | null)?.message;
    if (update.type !== "status" || typeof message !== "string") continue;
    const seen = latest.get(update.attemptId);
    if (!seen || seen.at < update.updatedAt) {
      latest.set(update.attemptId, { text: message, at: update.updatedAt });
    }
  }
  return new Map([...latest].map(([id, note]) => [id, note.text]));
}

const STATE_GLYPHS: Record<string, string> = {
  running: "◐",
  waiting: "⏸",
  ok: "✓",
  failed: "✗",
  timed_out: "⧗",
  cancelled: "⊘",
  interrupted: "↻",
};

const KIND_GLYPHS: Record<string, string> = {
  agent: "●",
  decision: "◇",
  assistantMessage: "✎",
  compute: "ƒ",
  notify: "!",
  shell: "$",
  action: "*",
  checkpoint: "◆",
  humanDecision: "◆",
};

/** One line per node, its latest attempt; at most 10 lines, keeping the most recent nodes. */
export function widgetLines(input: ProgressInput): string[] {
  const latest = new Map<string, AttemptSummary>();
  for (const attempt of [...input.attempts].sort((a, b) => a.sequence - b.sequence)) {
    latest.delete(attempt.nodeId); // Re-insert so a node that ran again moves to the end.
    latest.set(attempt.nodeId, attempt);
  }
  const visits = new Map<string, number>();
  for (const attempt of input.attempts) {
    visits.set(attempt.nodeId, (visits.get(attempt.nodeId) ?? 0) + 1);
  }
  const progressByAttempt = new Map(progressOf(input.updates ?? []).map((p) => [p.attemptId, p]));
  const notes = notesOf(input.updates ?? []);
  const lines = [...latest.values()].map((attempt) => {
    const parts = [
      `${stateGlyph(attempt, input.run)} ${KIND_GLYPHS[attempt.nodeKind] ?? "·"} ${attempt.nodeId}`,
    ];
    const count = visits.get(attempt.nodeId) ?? 1;
    if (count > 1) parts[0] += ` ×${count}`;
    parts.push(duration((attempt.finishedAt ?? input.now) - attempt.startedAt));
    // A fork's step taken over from its parent run, not run again.
    if (attempt.adoptedFrom) parts.push("adopted");
    const detail = notes.get(attempt.attemptId) ?? input.details?.[attempt.nodeId];
    if (attempt.state === "running" || attempt.state === "waiting") {
      if (detail) parts.push(detail);
    } else if (attempt.error && attempt.state !== "ok") {
      parts.push(attempt.error.message);
    }
    const progress = progressByAttempt.get(attempt.attemptId);
    if (progress && attempt.state === "running") {
      parts.push(progressText(progress, attempt.startedAt, input.now));
    }
    // Once the step ended: an open step's line ends with its detail (the model's latest note).
    const open = attempt.state === "running" || attempt.state === "waiting";
    if (attempt.usage && !open) parts.push(formatUsage(attempt.usage));
    return clip(parts.join("  "), 160);
  });
  return lines.slice(-MAX_WIDGET_LINES);
}

/**
 * A model step `waiting` on its interactive request is the model's turn in the origin session,
 * so it shows as working; a pause sign is for what waits on a person (a checkpoint, a decision)
 * or on a paused run.
 */
function stateGlyph(attempt: AttemptSummary, run: RunSummary): string {
  if (attempt.state === "waiting" && MODEL_KINDS.has(attempt.nodeKind) && !run.paused) {
    return STATE_GLYPHS.running;
  }
  return STATE_GLYPHS[attempt.state] ?? "·";
}

const MODEL_KINDS: ReadonlySet<string> = new Set([
  "agent",
  "agentGroup",
  "decision",
  "assistantMessage",
]);

/**
 * The footer status: `wf <workflow> <state>[ paused][ blocked <reason>] <active node>`. A blocked
 * run's state stays `running` (parked for review), so the footer names the block: it waits for a
 * person, not for work.
 */
export function statusLine(input: ProgressInput): string {
  const { run } = input;
  const active = [...input.attempts].sort((a, b) => b.sequence - a.sequence)
    .find((a) => a.state === "running" || a.state === "waiting");
  const parts = [`wf ${run.title ?? run.workflowName}`, run.state];
  if (run.paused) parts.push("paused");
  if (run.blockedReason && !TERMINAL_RUN_STATES.has(run.state)) {
    parts.push(`blocked ${run.blockedReason}`);
  }
  if (active && !TERMINAL_RUN_STATES.has(run.state)) parts.push(active.nodeId);
  return clip(parts.join(" "), 120);
}

export const TERMINAL_RUN_STATES: ReadonlySet<string> = new Set([
  "completed",
  "failed",
  "timed_out",
  "cancelled",
]);

function progressText(progress: NodeProgress, startedAt: number, now: number): string {
  const unit = progress.unit ? ` ${progress.unit}` : "";
  const label = progress.label ? `${progress.label} ` : "";
  if (progress.total === undefined || progress.total <= 0) {
    return `${label}${progress.completed}${unit}`;
  }
  const done = Math.min(progress.completed, progress.total);
  const percent = Math.floor((done / progress.total) * 100);
  let text = `${label}${done}/${progress.total}${unit} ${percent}%`;
  // The rate from the attempt's start to the latest report; the ETA counts down from there.
  const { etaMs } = estimateProgress([
    { at: startedAt, completed: 0 },
    { at: progress.updatedAt, completed: done, total: progress.total },
  ]);
  if (etaMs !== null && done < progress.total) {
    text += ` ETA ${duration(Math.max(0, etaMs - (now - progress.updatedAt)))}`;
  }
  return text;
}

/** `850ms`, `12s`, `3m04s`, `2h05m`. */
export function duration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m${String(seconds % 60).padStart(2, "0")}s`;
  return `${Math.floor(minutes / 60)}h${String(minutes % 60).padStart(2, "0")}m`;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s*\n\s*/g, " ");
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
