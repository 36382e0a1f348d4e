/**
 * `pi-workflows view`: the read-only terminal viewer. It opens the state database read-only
 * (works with or without a running host, never writes) and either prints one plain snapshot
 * (`--once`, or stdout is not a terminal) or runs the live full-screen view: a refresh tick
 * every 200 ms (one head query while nothing changed), a redraw when data or keys changed and
 * once a second for the running timers.
 */
import { randomIds, systemClock } from "../base/clock.ts";
import { closeStateStore, damagedReadError, openStateStore } from "../state/store.ts";
import { localeIsUtf8 } from "../render/ascii-fallback.ts";
import { colorEnabled } from "./ansi.ts";
import { compose, frameLines, snapshotText } from "./compose.ts";
import { parseKeys } from "./keys.ts";
import { filterRuns } from "./run-filter.ts";
import { Screen } from "./screen.ts";
import { applyKey, initialUi, type UiState } from "./ui-state.ts";
import {
  createViewerData,
  refreshViewerData,
  setListFilter,
  unwatchRun,
  type ViewerData,
  watchRun,
} from "./viewer-data.ts";

export const REFRESH_MS = 200;
const TIMER_REDRAW_MS = 1000;
const SNAPSHOT_WIDTH = 100;

export interface ViewOptions {
  stateDir: string;
  runId: string | null;
  all: boolean;
  once: boolean;
  /** The runs list's filter to start with (`--filter`). */
  filter?: string;
  env: NodeJS.ProcessEnv;
}

export interface ViewIo {
  output: NodeJS.WriteStream;
  input: NodeJS.ReadStream;
}

export async function runView(opts: ViewOptions, io: ViewIo): Promise<number> {
  const store = openStateStore({
    stateDir: opts.stateDir,
    clock: systemClock,
    ids: randomIds,
    readOnly: true,
  });
  try {
    const data = createViewerData(store, { all: opts.all || opts.runId !== null });
    const ui = initialUi({ runId: opts.runId, all: data.all, filter: opts.filter });
    if (ui.runId) watchRun(data, ui.runId);
    refreshViewerData(data);
    const ascii = !localeIsUtf8(opts.env);
    const live = !opts.once && io.output.isTTY === true && io.input.isTTY === true;
    if (!live) {
      const width = io.output.isTTY ? io.output.columns || SNAPSHOT_WIDTH : SNAPSHOT_WIDTH;
      const composed = compose(data, ui, width, 1_000_000, Date.now(), true);
      io.output.write(snapshotText(composed, width, ascii));
      return 0;
    }
    return await liveView(data, ui, io, colorEnabled(opts.env, true), ascii);
  } catch (error) {
    // The viewer opens without the host's whole-file check (it must start at once on a large
    // file), so a damaged page shows when a read reaches it: say so as the host would.
    throw damagedReadError(store.path, error) ?? error;
  } finally {
    closeStateStore(store);
  }
}

function liveView(
  data: ViewerData,
  start: UiState,
  io: ViewIo,
  color: boolean,
  ascii: boolean,
): Promise<number> {
  const screen = new Screen(io);
  let ui = start;
  let lastPosition: number | null | undefined = undefined;
  let lastDraw = 0;
  return new Promise((resolve, reject) => {
    const draw = () => {
      const now = Date.now();
      const composed = compose(data, ui, screen.width, screen.height, now);
      const follow = ui.position !== lastPosition;
      lastPosition = ui.position;
      const frame = frameLines(composed, ui, screen.width, screen.height, color, follow, ascii);
      ui = { ...ui, scroll: frame.scroll };
      pageRows = frame.pageRows;
      screen.render(frame.lines);
      lastDraw = now;
    };
    let pageRows = 10;
    const finish = (error?: unknown) => {
      clearInterval(timer);
      screen.stop();
      if (error === undefined) resolve(0);
      else reject(error);
    };
    // A read that fails (a damaged page) ends the view with its message, screen restored.
    const guarded = (step: () => void) => () => {
      try {
        step();
      } catch (error) {
        finish(error);
      }
    };
    const onKeys = (chunk: string) => {
      for (const key of parseKeys(chunk)) {
        const before = ui;
        ui = applyKey(ui, key, {
          runIds: filterRuns(data.runs, ui.filter).map((r) => r.runId),
          steps: data.watched?.attempts.length ?? 0,
          pageRows,
        });
        if (ui.quit) return finish();
        if (ui.all !== before.all) setListFilter(data, ui.all);
        if (ui.screen === "detail" && ui.runId && ui.runId !== before.runId) {
          watchRun(data, ui.runId);
        }
        if (ui.screen === "list" && before.screen === "detail") unwatchRun(data);
      }
      refreshViewerData(data);
      draw();
    };
    const timer = setInterval(
      guarded(() => {
        const changed = refreshViewerData(data);
        if (changed || Date.now() - lastDraw >= TIMER_REDRAW_MS) draw();
      }),
      REFRESH_MS,
    );
    screen.start((chunk) => guarded(() => onKeys(chunk))(), guarded(draw));
    guarded(draw)();
  });
}
