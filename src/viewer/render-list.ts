/** The runs list screen as styled lines (pure). */
import { shortRunId } from "../base/run-id-text.ts";
import { concat, line, type StyledLine, truncate } from "../render/mod.ts";
import type { RunRow } from "../state/viewer-queries.ts";
import type { ProgressRow } from "../state/viewer-step-queries.ts";
import { progressText, runStateLabel, runTimes } from "./run-labels.ts";

export interface ListView {
  /** The runs shown (the filter already applied). */
  runs: readonly RunRow[];
  /** The filter's text ("" for none) and whether it is being typed. */
  filter?: { text: string; editing: boolean };
  progress: ReadonlyMap<string, readonly ProgressRow[]>;
  all: boolean;
  selected: number;
  width: number;
  /** Rows available for run lines (the list scrolls to keep the selection visible). */
  rows: number;
  now: number;
  /** A printed snapshot (`view --once`): no keys to press, so the hint names the option. */
  snapshot?: boolean;
}

export function renderList(view: ListView): { header: StyledLine[]; body: StyledLine[] } {
  const { width, now } = view;
  const scope = view.all ? "all" : "active";
  const filter = view.filter ?? { text: "", editing: false };
  const header: StyledLine[] = [
    concat(
      { text: "pi-workflows runs", style: "heading" },
      { text: ` · ${scope} (${view.runs.length})`, style: "muted" },
      {
        text: filter.editing
          ? ` · filter: ${filter.text}_`
          : filter.text !== ""
          ? ` · filter "${filter.text}"`
          : "",
        style: "label",
      },
    ),
  ];
  if (view.runs.length === 0) {
    return {
      header,
      body: [[{
        text: filter.text !== ""
          ? `No ${scope === "all" ? "" : "active "}runs match "${filter.text}".${
            view.snapshot ? "" : " Esc clears the filter."
          }`
          : view.all
          ? "No runs yet."
          : view.snapshot
          ? "No active runs. 'pi-workflows view --all' shows all runs."
          : "No active runs. Press a (or run view --all) to show all runs.",
        style: "muted",
      }]],
    };
  }
  const wide = width >= 72;
  const workflowW = Math.min(18, Math.max(8, Math.floor(width / 5)));
  const first = Math.max(0, Math.min(view.selected - view.rows + 1, view.runs.length - view.rows));
  const start = Math.max(0, Math.min(first, view.selected));
  const shown = view.runs.slice(start, start + view.rows);
  // The short id people type in commands (`pi-workflows status run-1a2b3c4d`).
  const ids = shown.map((run) => shortRunId(run.runId));
  const idW = Math.max(2, ...ids.map((id) => id.length));
  const tails = shown.map((run) => {
    const progress = progressText(run, view.progress.get(run.runId), now);
    return progress ? `  ${progress}` : "";
  });
  // One width for every row's progress, so the columns before it line up (the title gives way).
  const tailW = wide ? Math.max(0, ...tails.map((t) => t.length)) : 0;
  if (wide) {
    const fixed = 12 + idW + 1 + workflowW + 1 + 12 + 17 + tailW;
    header.push(line(
      ` ${"state".padEnd(12)}${"id".padEnd(idW + 1)}${"workflow".padEnd(workflowW + 1)}${
        "title".padEnd(Math.max(0, width - fixed - 2))
      }` +
        ` ${"mode".padEnd(11)} ${"age".padStart(8)} ${"elapsed".padStart(7)}`,
      "muted",
    ));
  }
  const body = shown.map((run, i) => {
    const label = runStateLabel(run);
    const { age, elapsed } = runTimes(run, now);
    const selected = start + i === view.selected;
    const stateText = wide ? `${label.glyph} ${label.word.padEnd(9)} ` : `${label.glyph} `;
    const mode = wide ? ` ${run.executionMode.padEnd(11)}` : "";
    const times = wide ? ` ${age.padStart(8)} ${elapsed.padStart(7)}` : ` ${elapsed.padStart(6)}`;
    const tail = tails[i];
    const id = `${ids[i].padEnd(idW)} `;
    const fixed = stateText.length + id.length + workflowW + 1 + mode.length + times.length +
      Math.max(tail.length, tailW);
    const titleW = Math.max(0, width - fixed - 2);
    const title = wide || titleW >= 8 ? truncate(run.title ?? "", titleW).padEnd(titleW) : "";
    const line = concat(
      { text: selected ? "▶" : " ", style: selected ? "selected" : "" },
      { text: stateText, style: label.style },
      { text: id, style: "muted" },
      { text: `${truncate(run.workflowName, workflowW).padEnd(workflowW)} `, style: "title" },
      { text: title, style: selected ? "selected" : "" },
      { text: mode, style: "muted" },
      { text: times, style: "muted" },
      { text: tail, style: "running" },
    );
    return line;
  });
  return { header, body };
}

export const LIST_KEYS = "↑/↓ select · enter open · a active/all · / filter · q quit";
export const FILTER_KEYS =
  "type to filter by id, workflow, title or state · enter keep · esc clear";
