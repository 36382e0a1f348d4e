/**
 * What the user is looking at, and how keys move it. Runs list: ↑/↓ select, enter opens,
 * `a` toggles active/all, `/` types a filter (enter keeps it, Esc clears it), q quits. Run detail: ←/→ replay one step (past the last step follows
 * live again), Home/End first step/live, ↑/↓/PgUp/PgDn scroll, q/Esc back (or quit when the
 * viewer was opened on one run). Pure: the app applies the resulting effects to the data.
 */
import type { Key } from "./keys.ts";

export interface UiState {
  screen: "list" | "detail";
  all: boolean;
  /** Index into the runs list (as filtered). */
  selected: number;
  /** The runs list's filter (`run-filter.ts`), "" for none. */
  filter: string;
  /** The filter is being typed: keys edit it. */
  filtering: boolean;
  runId: string | null;
  /** Replay position (1-based step); null follows live. */
  position: number | null;
  /** First body row shown in the detail view. */
  scroll: number;
  /** Opened with `view <runId>`: leaving the detail quits. */
  single: boolean;
  quit: boolean;
}

export function initialUi(
  opts: { runId?: string | null; all?: boolean; filter?: string },
): UiState {
  const runId = opts.runId ?? null;
  return {
    screen: runId ? "detail" : "list",
    all: opts.all ?? false,
    selected: 0,
    filter: opts.filter ?? "",
    filtering: false,
    runId,
    position: null,
    scroll: 0,
    single: runId !== null,
    quit: false,
  };
}

export interface KeyContext {
  /** Run ids of the list (as filtered), in order. */
  runIds: readonly string[];
  /** Steps (attempts) of the open run. */
  steps: number;
  /** Body rows visible in the detail view. */
  pageRows: number;
}

export function applyKey(ui: UiState, key: Key, ctx: KeyContext): UiState {
  if (key === "ctrlC") return { ...ui, quit: true };
  return ui.screen === "list" ? listKey(ui, key, ctx) : detailKey(ui, key, ctx);
}

function filterKey(ui: UiState, key: Key): UiState {
  if (key === "enter") return { ...ui, filtering: false };
  if (key === "escape") return { ...ui, filtering: false, filter: "", selected: 0 };
  if (key === "backspace") return { ...ui, filter: ui.filter.slice(0, -1), selected: 0 };
  if (key.startsWith("char:")) {
    return { ...ui, filter: (ui.filter + key.slice(5)).slice(0, 100), selected: 0 };
  }
  return ui;
}

function listKey(ui: UiState, key: Key, ctx: KeyContext): UiState {
  if (ui.filtering) return filterKey(ui, key);
  const last = Math.max(0, ctx.runIds.length - 1);
  switch (key) {
    case "char:/":
      return { ...ui, filtering: true };
    case "up":
      return { ...ui, selected: Math.max(0, ui.selected - 1) };
    case "down":
      return { ...ui, selected: Math.min(last, ui.selected + 1) };
    case "pageUp":
      return { ...ui, selected: Math.max(0, ui.selected - 10) };
    case "pageDown":
      return { ...ui, selected: Math.min(last, ui.selected + 10) };
    case "home":
      return { ...ui, selected: 0 };
    case "end":
      return { ...ui, selected: last };
    case "enter": {
      const runId = ctx.runIds[ui.selected];
      return runId ? { ...ui, screen: "detail", runId, position: null, scroll: 0 } : ui;
    }
    case "char:a":
    case "char:f":
    case "tab":
      return { ...ui, all: !ui.all, selected: 0 };
    case "escape":
      return ui.filter !== "" ? { ...ui, filter: "", selected: 0 } : { ...ui, quit: true };
    case "char:q":
      return { ...ui, quit: true };
    default:
      return ui;
  }
}

function detailKey(ui: UiState, key: Key, ctx: KeyContext): UiState {
  const steps = ctx.steps;
  switch (key) {
    case "left": {
      const at = ui.position ?? steps;
      return steps === 0 ? ui : { ...ui, position: Math.max(1, at - 1) };
    }
    case "right": {
      if (ui.position === null) return ui;
      return { ...ui, position: ui.position + 1 > steps ? null : ui.position + 1 };
    }
    case "home":
      return steps === 0 ? ui : { ...ui, position: 1 };
    case "end":
      return { ...ui, position: null };
    case "up":
      return { ...ui, scroll: Math.max(0, ui.scroll - 1) };
    case "down":
      return { ...ui, scroll: ui.scroll + 1 };
    case "pageUp":
      return { ...ui, scroll: Math.max(0, ui.scroll - ctx.pageRows) };
    case "pageDown":
      return { ...ui, scroll: ui.scroll + ctx.pageRows };
    case "char:q":
    case "escape":
    case "backspace":
      return ui.single ? { ...ui, quit: true } : { ...ui, screen: "list", runId: null };
    default:
      return ui;
  }
}
