/** Plain-text views of runs for people: one run, a list of runs, and progress events. */
import { canonicalJson } from "../protocol/canonical-json.ts";
import type {
  AmbiguousEffectSummary,
  AttemptSummary,
  RunEvent,
  RunSummary,
  UpdateSummary,
} from "../protocol/run-operations.ts";

const MAX_VALUE_CHARS = 2000;

export function formatRunHeadline(run: RunSummary): string {
  const flags = [
    run.paused ? "paused" : "",
    run.blockedReason ? `blocked: ${run.blockedReason}` : "",
  ]
    .filter(Boolean);
  const title = run.title ? ` — ${run.title}` : "";
  return `${run.runId}  ${run.workflowName}${title}  ${run.state}${
    flags.length ? ` (${flags.join(", ")})` : ""
  }`;
}

/** One run; `attemptCount` (when more than shown) says that only the last attempts are listed. */
export function formatRun(
  run: RunSummary,
  attempts: readonly AttemptSummary[] = [],
  ambiguous: readonly AmbiguousEffectSummary[] = [],
  updates: readonly UpdateSummary[] = [],
  attemptCount = attempts.length,
): string {
  const lines = [
    `run ${run.runId}`,
    `workflow: ${run.workflowName}${run.title ? ` — ${run.title}` : ""}`,
    `state: ${run.state} (queue ${run.queueState})${run.paused ? ", paused" : ""}${
      run.blockedReason ? `, blocked: ${run.blockedReason}` : ""
    }`,
    `revision: ${run.revision}`,
    `mode: ${run.executionMode}`,
    `created: ${new Date(run.createdAt).toISOString()}`,
    `updated: ${new Date(run.updatedAt).toISOString()}`,
  ];
  if (attempts.length > 0) {
    lines.push(
      attemptCount > attempts.length
        ? `nodes (the last ${attempts.length} of ${attemptCount} attempts; --attempts all shows ` +
          "every one):"
        : "nodes:",
    );
    for (const attempt of attempts) lines.push(`  ${formatAttempt(attempt)}`);
  }
  if (updates.length > 0) {
    lines.push("updates (latest first):");
    for (const u of updates) {
      const key = u.key ? ` ${u.key}` : "";
      const data = formatValue(u.data);
      lines.push(
        `  ${u.nodeId} ${u.type}${key}: ${data.length > 200 ? `${data.slice(0, 200)}…` : data}`,
      );
    }
  }
  if (run.output !== undefined) lines.push(`output: ${formatValue(run.output)}`);
  if (run.error) lines.push(`error: ${run.error.code}: ${run.error.message}`);
  lines.push(...formatAmbiguous(run, attempts, ambiguous));
  return lines.join("\n");
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
  const lines: string[] = [];
  if (ambiguous.length > 0) {
    lines.push("ambiguous effects (may have applied without a receipt):");
    for (const e of ambiguous) {
      lines.push(
        `  node ${e.nodeId}, attempt ${e.attemptId}, effect ${e.effectId}${
          e.managed ? "" : " (action without a managed effect)"
        }`,
      );
    }
  }
  const blocking = attempts.at(-1);
  if (run.blockedReason === "effectAmbiguous" && blocking) {
    const base = `pi-workflows effect resolve ${run.runId} ${blocking.attemptId}`;
    lines.push(
      "check the external system, then record what happened (a plain resume is refused):",
      `  ${base} --applied '<output-json>'   it applied; the JSON becomes the node's output`,
      `  ${base} --not-applied               it did not apply; run the node again`,
      `  ${base} --retry                     unknown; run the node again anyway`,
    );
  } else if (ambiguous.length > 0) {
    lines.push("the run has ended: check these effects by hand");
  }
  return lines;
}

const ATTEMPT_MARKS: Record<AttemptSummary["state"], string> = {
  running: "…",
  waiting: "?",
  ok: "✓",
  failed: "✗",
  timed_out: "⧗",
  cancelled: "⊘",
  interrupted: "↺",
};

function formatAttempt(attempt: AttemptSummary): string {
  const took = attempt.finishedAt !== undefined
    ? ` ${Math.max(0, attempt.finishedAt - attempt.startedAt)} ms`
    : "";
  const error = attempt.error ? `: ${attempt.error.message}` : "";
  return `${
    ATTEMPT_MARKS[attempt.state]
  } ${attempt.nodeId} (${attempt.nodeKind}, ${attempt.state}${took})${error}`;
}

/** The runs, newest first, and a last line when `total` says more exist than are shown. */
export function formatRunList(
  runs: readonly RunSummary[],
  total = runs.length,
  all = false,
): string {
  const more = total > runs.length
    ? `\nShowing ${runs.length} of ${total} ${all ? "" : "active "}runs: ${
      all ? "--all without --limit shows every one" : "--limit N or --all shows more"
    }`
    : "";
  if (runs.length === 0) return `No runs${more}`;
  const width = Math.max(...runs.map((run) => run.state.length + (run.paused ? 8 : 0)));
  return runs.map((run) => {
    const state = `${run.state}${run.paused ? " (paused)" : ""}`.padEnd(width + 1);
    return `${state} ${run.runId}  ${run.workflowName}${run.title ? ` — ${run.title}` : ""}`;
  }).join("\n") + more;
}

/** One progress line per event `start --wait` shows; null for events people need not see. */
export function formatEvent(event: RunEvent): string | null {
  const node = event.nodeId ?? "";
  const data = (event.data ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case "node.started":
      return `▶ ${node}`;
    case "node.finished":
      return `✓ ${node}`;
    case "node.failed":
      return `✗ ${node}${typeof data.code === "string" ? `: ${data.code}` : ""}`;
    case "node.timed_out":
      return `⧗ ${node} timed out`;
    case "node.update":
      return `  · ${node} ${typeof data.type === "string" ? data.type : "update"}${
        typeof data.key === "string" ? ` ${data.key}` : ""
      }`;
    case "run.waiting":
      return "? waiting for input";
    case "run.paused":
      return "‖ paused";
    case "run.resumed":
      return "▷ resumed";
    case "run.blocked":
      return "‖ blocked for review";
    default:
      return null;
  }
}

export function formatValue(value: unknown): string {
  const text = typeof value === "string" ? value : canonicalJson(value);
  return text.length > MAX_VALUE_CHARS ? `${text.slice(0, MAX_VALUE_CHARS)}… (truncated)` : text;
}
