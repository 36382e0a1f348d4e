/** Short human figures shared by the graph, the timeline and the runs list. */

/** `850ms`, `1.2s`, `42s`, `3m05s`, `2h04m`, `3d02h`. */
export function formatDuration(ms: number): string {
  const v = Math.max(0, Math.round(ms));
  if (v < 1000) return `${v}ms`;
  if (v < 10_000) return `${(Math.floor(v / 100) / 10).toFixed(1)}s`;
  const s = Math.floor(v / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${pad(s % 60)}s`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h${pad(m % 60)}m`;
  return `${Math.floor(h / 24)}d${pad(h % 24)}h`;
}

/** A rounded span: `850ms`, `42s`, `3m`, `5h`, `2d`. */
export function roughSpan(ms: number): string {
  const v = Math.max(0, Math.round(ms));
  if (v < 1000) return `${v}ms`;
  const s = Math.round(v / 1000);
  if (s < 120) return `${s}s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m}m`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h}h` : `${Math.round(h / 24)}d`;
}

/**
 * How far a time is from now, rounded: `3m ago`, `in 10m`. The one way an age or a coming time
 * reads everywhere (run lists, the viewer, status, schedules); `formatDuration` is for how long
 * something took.
 */
export function formatAge(at: number, now: number): string {
  const delta = at - now;
  return delta >= 0 ? `in ${roughSpan(delta)}` : `${roughSpan(-delta)} ago`;
}

function pad(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

/** Glyph of a node kind (0.12's set, extended for the newer kinds). */
export function kindGlyph(kind: string): string {
  switch (kind) {
    case "agent":
      return "●";
    case "compute":
      return "ƒ";
    case "notify":
      return "!";
    case "shell":
      return "$";
    case "action":
      return "*";
    case "checkpoint":
      return "◆";
    case "humanDecision":
      return "◈";
    case "decision":
      return "◇";
    case "assistantMessage":
      return "»";
    default:
      return "•";
  }
}

export type NodeState =
  | "pending"
  | "running"
  | "waiting"
  | "ok"
  | "failed"
  | "timed_out"
  | "cancelled"
  | "interrupted"
  /** Never attempted, and the run went another way (or ended) past every way into it. */
  | "skipped";

/** Glyph and word of an attempt state (`pending` = never attempted). */
export function stateGlyph(state: NodeState): string {
  switch (state) {
    case "running":
      return "◐";
    case "waiting":
      return "⏸";
    case "ok":
      return "✓";
    case "failed":
    case "timed_out":
      return "✗";
    case "cancelled":
      return "⊘";
    case "interrupted":
      return "↯";
    case "skipped":
      return "–";
    default:
      return "·";
  }
}

export function stateWord(state: NodeState): string {
  return state === "timed_out" ? "timed out" : state;
}
