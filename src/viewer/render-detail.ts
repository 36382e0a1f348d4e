/**
 * The run detail screen as styled lines (pure): header, the boxed graph at the replay position,
 * the step timeline and the inspector for the step at that position (or the newest step when
 * following live), then the run's output or error.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { formatRunSpend } from "../protocol/budget.ts";
import { formatUsage, formatUsageDetail } from "../protocol/step-usage.ts";
import { rejectionsText } from "../protocol/submissions.ts";
import {
  clipLine,
  concat,
  formatDuration,
  kindGlyph,
  line,
  renderGraph,
  sceneAt,
  stateGlyph,
  stateStyle,
  type StyledLine,
  truncate,
  type WorkflowGraph,
} from "../render/mod.ts";
import type { NodeState } from "../render/mod.ts";
import type { RunRow } from "../state/viewer-queries.ts";
import type { AttemptDetail, AttemptRow, ProgressRow } from "../state/viewer-step-queries.ts";
import { progressText, runStateLabel, runTimes } from "./run-labels.ts";

export interface DetailView {
  run: RunRow;
  attempts: readonly AttemptRow[];
  graph: WorkflowGraph | null;
  progress: readonly ProgressRow[] | undefined;
  output: JsonValue | undefined;
  /** The last line the running step printed. */
  lastOutput?: { attemptId: string; line: string } | null;
  /** 1-based replay position, null = live. */
  position: number | null;
  /** Facts of the inspected step, when read. */
  detail: AttemptDetail | undefined;
  width: number;
  now: number;
}

export interface DetailScreen {
  header: StyledLine[];
  body: StyledLine[];
  /** Body row of the active card's title (to keep it in view while replaying), or -1. */
  focusRow: number;
}

const ENDED = new Set(["completed", "failed", "timed_out", "cancelled"]);

/** MAX lines of one pretty-printed value in the inspector. */
const MAX_VALUE_LINES = 200;

export function renderDetail(view: DetailView): DetailScreen {
  const { run, attempts, width, now } = view;
  const label = runStateLabel(run);
  const { elapsed } = runTimes(run, now);
  const steps = attempts.length;
  const at = view.position === null ? steps : Math.min(view.position, steps);
  const facts = [
    run.blockedReason ? `blocked: ${run.blockedReason}` : "",
    run.forkedFrom ? `fork of ${run.forkedFrom.runId} at ${run.forkedFrom.nodeId}` : "",
    `step ${at}/${steps}`,
    `elapsed ${elapsed}`,
    run.executionMode,
    progressText(run, view.progress, now) ?? "",
  ].filter((f) => f !== "");
  const header: StyledLine[] = [
    concat(
      { text: run.workflowName, style: "heading" },
      {
        text: run.title
          ? ` — ${truncate(run.title, Math.max(0, width - run.workflowName.length - 3))}`
          : "",
        style: "",
      },
    ),
    concat(
      { text: `${label.glyph} ${label.word}`, style: label.style },
      {
        text: view.position === null ? " · live" : ` · replay ${at}/${steps}`,
        style: view.position === null ? "running" : "warn",
      },
      { text: ` · ${facts.join(" · ")}`, style: "muted" },
    ),
    ...spendLine(run),
  ].map((l) => clipLine(l, width));

  const body: StyledLine[] = [];
  let focusRow = -1;
  // Past the last step of an ended run, nodes never attempted were skipped, not pending.
  const ended = ENDED.has(run.state) && (view.position === null || view.position >= steps);
  const scene = sceneAt(attempts, view.position, now, { graph: view.graph, ended });
  if (view.graph) {
    const graph = renderGraph(view.graph, scene, { width });
    // Only the active card (or line) carries the `active` style.
    focusRow = graph.findIndex((l) => l.some((seg) => seg.style === "active"));
    body.push(...graph);
  } else {
    body.push(line("(no graph recorded for this run)", "muted"));
  }

  body.push([], line("steps", "heading"));
  if (steps === 0) body.push(line("  no steps yet", "muted"));
  attempts.forEach((a, i) => {
    const printed = view.lastOutput?.attemptId === a.attemptId ? view.lastOutput.line : null;
    body.push(stepLine(a, i + 1, at, width, now, printed));
  });

  const inspected = at > 0 ? attempts[at - 1] : undefined;
  if (inspected) body.push([], ...inspector(inspected, at, view.detail, width));
  if (run.state === "completed" && view.output !== undefined && view.output !== null) {
    body.push([], line("output", "heading"), ...valueLines(view.output, width));
  }
  if (run.error) {
    body.push(
      [],
      line("error", "heading"),
      line(truncate(`${run.error.code}: ${run.error.message}`, width), "failed"),
    );
  }
  return { header, body: body.map((l) => clipLine(l, width)), focusRow };
}

/** The run's spend and budget on a line of its own (none before it spent or has a budget). */
function spendLine(run: RunRow): StyledLine[] {
  const limited = run.budget.maxCostUsd !== undefined || run.budget.maxTokens !== undefined;
  if (!run.spend && !limited) return [];
  const text = `spend ${formatRunSpend(run.spend ?? { tokens: 0, cost: null }, run.budget)}`;
  return [line(text, run.blockedReason === "budgetExceeded" ? "warn" : "muted")];
}

function stepLine(
  a: AttemptRow,
  n: number,
  at: number,
  width: number,
  now: number,
  printed: string | null,
): StyledLine {
  const state = a.state as NodeState;
  const future = n > at;
  const here = n === at;
  const duration = a.finishedAt !== null
    ? formatDuration(a.finishedAt - a.startedAt)
    : a.state === "running" || a.state === "waiting"
    ? formatDuration(now - a.startedAt)
    : "";
  const rejected = a.submissions ? rejectionsText(a.submissions) : "";
  const outcome = a.error
    ? `${a.error.code}: ${a.error.message}`
    : rejected
    ? `${rejected}${a.outputBytes > 0 ? `, ${a.outputBytes} B output` : ""}`
    : a.outputBytes > 0
    ? `${a.outputBytes} B output`
    : "";
  // What a model step used comes first: an error message may be long.
  const used = a.usage ? formatUsage(a.usage) : "";
  const adopted = a.adopted ? "adopted from the parent run" : "";
  const output = printed === null ? "" : `› ${printed}`;
  const preview = [adopted, used, outcome, output].filter((p) => p !== "").join(" · ");
  const head = `${here ? "▶" : " "}${String(n).padStart(3)} `;
  const body = `${a.nodeId} (${kindGlyph(a.nodeKind)} ${a.nodeKind}, ${duration || "-"})`;
  const rest = Math.max(0, width - head.length - 2 - body.length - 2);
  return concat(
    { text: head, style: here ? "selected" : "muted" },
    { text: stateGlyph(state), style: future ? "muted" : stateStyle(state) },
    { text: ` ${body}`, style: future ? "muted" : here ? "active" : "" },
    {
      text: preview && rest > 4 ? `  ${truncate(preview, rest)}` : "",
      style: a.error ? "failed" : "muted",
    },
  );
}

function inspector(
  a: AttemptRow,
  n: number,
  detail: AttemptDetail | undefined,
  width: number,
): StyledLine[] {
  const out: StyledLine[] = [
    concat(
      { text: `step ${n}: ${a.nodeId}`, style: "heading" },
      { text: ` · ${a.nodeKind} · ${a.state} · generation ${a.generation}`, style: "muted" },
    ),
  ];
  if (a.deadlineAt !== null) {
    out.push(line(`  deadline ${formatDuration(a.deadlineAt - a.startedAt)} after start`, "muted"));
  }
  if (a.usage) {
    out.push(line(truncate(`  used ${formatUsageDetail(a.usage)}`, width), "label"));
    for (const member of a.usage.members ?? []) {
      out.push(line(truncate(`    ${member.id}: ${formatUsageDetail(member)}`, width), "muted"));
    }
  }
  if (!detail) return out;
  if (detail.error) {
    out.push(
      line(truncate(`  error ${detail.error.code}: ${detail.error.message}`, width), "failed"),
    );
  }
  if (a.submissions && a.submissions.rejected > 0) {
    const last = a.submissions.lastRejection;
    out.push(
      line(
        truncate(`  ${rejectionsText(a.submissions)}${last ? `, the last: ${last}` : ""}`, width),
        "warn",
      ),
    );
  }
  const receipt = shellReceipt(detail.output);
  if (receipt) out.push(line(truncate(`  ${receipt}`, width), "label"));
  for (const e of detail.effects) {
    out.push(
      line(
        truncate(
          `  effect ${e.effectType}: ${e.state}${e.errorCode ? ` (${e.errorCode})` : ""}`,
          width,
        ),
        e.state === "ambiguous" ? "warn" : "muted",
      ),
    );
  }
  if (detail.interaction) {
    const i = detail.interaction;
    out.push(
      line(`  interaction ${i.kind}: ${i.status}`, i.status === "pending" ? "waiting" : "muted"),
    );
  }
  if (detail.decision) out.push(...decisionLines(detail.decision, width));
  if (detail.output !== undefined) {
    out.push(line("  output", "muted"), ...valueLines(detail.output, width));
  }
  return out;
}

function shellReceipt(output: JsonValue | undefined): string | null {
  if (typeof output !== "object" || output === null || Array.isArray(output)) return null;
  const o = output as Record<string, JsonValue>;
  if (typeof o.command !== "string" || !("exitCode" in o)) return null;
  const args = Array.isArray(o.args) ? o.args.map(String).join(" ") : "";
  const end = o.exitCode === null ? `signal ${String(o.signal)}` : `exit ${String(o.exitCode)}`;
  return `$ ${o.command}${args ? ` ${args}` : ""} → ${end}`;
}

function decisionLines(d: NonNullable<AttemptDetail["decision"]>, width: number): StyledLine[] {
  const out: StyledLine[] = [
    line(
      `  ${d.kind === "humanDecision" ? "human decision" : "checkpoint"}: ${d.state}${
        d.resolution ? ` (${d.resolution})` : ""
      }`,
      d.state === "pending" ? "waiting" : "muted",
    ),
  ];
  const req = d.request as Record<string, JsonValue> | undefined;
  const text = (s: unknown, indent: string) => line(truncate(`${indent}${String(s)}`, width));
  if (req && typeof req === "object" && !Array.isArray(req)) {
    if (typeof req.title === "string") out.push(line(truncate(`  ${req.title}`, width), "title"));
    const p = req.presentation as Record<string, JsonValue> | undefined;
    if (p && typeof p === "object" && !Array.isArray(p)) {
      if (typeof p.summary === "string") out.push(text(p.summary, "  "));
      if (Array.isArray(p.blocks)) out.push(...blockLines(p.blocks, "  ", width));
    } else if (typeof req.summary === "string") out.push(text(req.summary, "  "));
  }
  if (d.answer !== undefined && d.answer !== null) {
    out.push(line(truncate(`  answer ${JSON.stringify(d.answer)}`, width), "ok"));
  }
  return out;
}

function blockLines(blocks: JsonValue[], indent: string, width: number): StyledLine[] {
  const out: StyledLine[] = [];
  for (const b of blocks) {
    if (typeof b !== "object" || b === null || Array.isArray(b)) continue;
    const block = b as Record<string, JsonValue>;
    switch (block.kind) {
      case "paragraph":
        out.push(line(truncate(`${indent}${String(block.text)}`, width)));
        break;
      case "bullets":
        for (const item of Array.isArray(block.items) ? block.items : []) {
          out.push(line(truncate(`${indent}• ${String(item)}`, width)));
        }
        break;
      case "fields":
        for (const f of Array.isArray(block.items) ? block.items : []) {
          const field = f as Record<string, JsonValue>;
          out.push(
            line(truncate(`${indent}${String(field.label)}: ${String(field.value)}`, width)),
          );
        }
        break;
      case "section":
        out.push(line(truncate(`${indent}${String(block.title)}`, width), "title"));
        if (Array.isArray(block.blocks)) {
          out.push(...blockLines(block.blocks, `${indent}  `, width));
        }
        break;
      case "preformatted":
        for (const l of String(block.text).split("\n")) {
          out.push(line(truncate(`${indent}${l}`, width), "muted"));
        }
        break;
    }
  }
  return out;
}

function valueLines(value: JsonValue, width: number): StyledLine[] {
  const text = typeof value === "string" ? value : JSON.stringify(value, null, 2);
  const lines = text.split("\n");
  const shown = lines.slice(0, MAX_VALUE_LINES).map((l) => line(truncate(`    ${l}`, width)));
  if (lines.length > MAX_VALUE_LINES) {
    shown.push(line(`    … ${lines.length - MAX_VALUE_LINES} more lines`, "muted"));
  }
  return shown;
}
