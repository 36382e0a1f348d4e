/**
 * One screenful from the data and the UI state: pinned header, a window of the scrolling body
 * and a key-help footer, for the live view; or the whole document for a `--once` snapshot.
 */
import { line, type StyledLine } from "../render/mod.ts";
import { toTerminal } from "./ansi.ts";
import { FILTER_KEYS, LIST_KEYS, renderList } from "./render-list.ts";
import { filterRuns } from "./run-filter.ts";
import { renderDetail } from "./render-detail.ts";
import type { UiState } from "./ui-state.ts";
import { attemptDetail, type ViewerData } from "./viewer-data.ts";

const DETAIL_KEYS = "←/→ replay · Home/End first/live · ↑/↓ scroll · q back";

export interface Composed {
  header: StyledLine[];
  body: StyledLine[];
  footer: StyledLine;
  focusRow: number;
}

export function compose(
  data: ViewerData,
  ui: UiState,
  width: number,
  rows: number,
  now: number,
  /** A printed snapshot (`--once`): no keys to press. */
  snapshot = false,
): Composed {
  if (ui.screen === "list") {
    const listRows = Math.max(1, rows - 3);
    const { header, body } = renderList({
      runs: filterRuns(data.runs, ui.filter),
      filter: { text: ui.filter, editing: ui.filtering },
      progress: data.progress,
      all: data.all,
      selected: ui.selected,
      width,
      rows: listRows,
      now,
      snapshot,
    });
    const footer = line(ui.filtering ? FILTER_KEYS : LIST_KEYS, "muted");
    return { header: [...header, []], body, footer, focusRow: -1 };
  }
  const watched = data.watched;
  const footer = line(ui.single ? DETAIL_KEYS.replace("q back", "q quit") : DETAIL_KEYS, "muted");
  if (!watched?.row) {
    return {
      header: [line(`Run not found: ${ui.runId ?? ""}`, "failed")],
      body: [],
      footer,
      focusRow: -1,
    };
  }
  const steps = watched.attempts.length;
  const at = ui.position === null ? steps : Math.min(ui.position, steps);
  const inspected = at > 0 ? watched.attempts[at - 1] : undefined;
  const screen = renderDetail({
    run: watched.row,
    attempts: watched.attempts,
    graph: watched.graph,
    progress: data.progress.get(watched.runId),
    output: watched.output,
    lastOutput: watched.lastOutput,
    position: ui.position,
    detail: inspected ? attemptDetail(data, inspected) : undefined,
    width,
    now,
  });
  return { header: [...screen.header, []], body: screen.body, footer, focusRow: screen.focusRow };
}

/** The frame rows of the live view, with the scroll clamped (and moved to the focus row). */
export function frameLines(
  composed: Composed,
  ui: UiState,
  width: number,
  height: number,
  color: boolean,
  followFocus: boolean,
  ascii = false,
): { lines: string[]; scroll: number; pageRows: number } {
  const pageRows = Math.max(1, height - composed.header.length - 1);
  let scroll = ui.screen === "list" ? 0 : ui.scroll;
  if (followFocus && composed.focusRow >= 0) {
    if (composed.focusRow < scroll || composed.focusRow + 6 > scroll + pageRows) {
      scroll = Math.max(0, composed.focusRow - 2);
    }
  }
  scroll = Math.max(0, Math.min(scroll, composed.body.length - pageRows));
  const visible = composed.body.slice(scroll, scroll + pageRows);
  while (visible.length < pageRows) visible.push([]);
  const lines = [...composed.header, ...visible, composed.footer]
    .slice(0, height)
    .map((l) => toTerminal(l, width, color, ascii));
  return { lines, scroll, pageRows };
}

/** The whole document as plain text (`--once`, non-TTY output). */
export function snapshotText(composed: Composed, width: number, ascii = false): string {
  return [...composed.header, ...composed.body]
    .map((l) => toTerminal(l, width, false, ascii).trimEnd())
    .join("\n")
    .replace(/\n+$/, "") + "\n";
}
