/**
 * The viewer's data side: what it has read from the database and how one refresh tick brings it
 * up to date. The first tick reads one bounded window (run rows, the watched run's attempt
 * summaries, its definition snapshot once per digest). Every later tick asks only for the newest
 * viewer delta revision; when that is unchanged it reads nothing else (zero payload rows). When
 * it moved, the runs named by the new deltas are re-read as small rows, and the watched run's
 * attempts from its first open one on. Outputs and decision requests are read only for the step
 * the inspector shows, and finished steps are cached because they never change.
 */
import { parseDefinitionSnapshot } from "../protocol/definition-snapshot.ts";
import { graphFromSnapshot, type WorkflowGraph } from "../render/mod.ts";
import {
  changedRunsSince,
  latestViewerRevision,
  listRunRows,
  readRunRows,
  type RunRow,
} from "../state/viewer-queries.ts";
import {
  type AttemptDetail,
  type AttemptRow,
  listAttemptRows,
  type ProgressRow,
  readAttemptDetail,
  readDefinitionSnapshot,
  readProgress,
  readRunOutput,
} from "../state/viewer-step-queries.ts";
import type { StateStore } from "../state/store.ts";
import { lastStepLine } from "../base/step-output-files.ts";
import { dirname, join } from "node:path";
import type { JsonValue } from "../protocol/canonical-json.ts";

/** Deltas read per tick before the viewer reloads instead of patching. */
const DELTA_WINDOW = 500;
/** Run rows in the list. */
const LIST_LIMIT = 1000;
const ATTEMPT_PAGE = 1000;
const DETAIL_CACHE = 32;
const TERMINAL = new Set(["completed", "failed", "timed_out", "cancelled"]);
const OPEN_ATTEMPT = new Set(["running", "waiting"]);

export interface WatchedRun {
  runId: string;
  row: RunRow | null;
  attempts: AttemptRow[];
  graph: WorkflowGraph | null;
  /** The run's output once it completed (read once). */
  output: JsonValue | undefined;
  /** The last line its running step printed (its output file, read every tick). */
  lastOutput: { attemptId: string; line: string } | null;
}

export interface ViewerData {
  store: StateStore;
  /** Newest viewer delta revision applied. */
  head: number;
  all: boolean;
  /** Loaded run rows, newest first. */
  runs: RunRow[];
  progress: Map<string, ProgressRow[]>;
  watched: WatchedRun | null;
  graphs: Map<string, WorkflowGraph | null>;
  details: Map<string, { state: string; revision: number; detail: AttemptDetail }>;
  /** False until the first window was read. */
  loaded: boolean;
}

export function createViewerData(store: StateStore, opts: { all?: boolean } = {}): ViewerData {
  return {
    store,
    head: 0,
    all: opts.all ?? false,
    runs: [],
    progress: new Map(),
    watched: null,
    graphs: new Map(),
    details: new Map(),
    loaded: false,
  };
}

/** One refresh tick; true when anything the screen shows may have changed. */
export function refreshViewerData(data: ViewerData): boolean {
  const printed = refreshLastOutput(data);
  const head = latestViewerRevision(data.store);
  if (data.loaded && head === data.head) return printed;
  if (!data.loaded) return reloadAll(data, head);
  const changes = changedRunsSince(data.store, data.head, DELTA_WINDOW);
  if (changes.truncated) return reloadAll(data, head);
  patchRuns(data, changes.runIds);
  if (data.watched && changes.runIds.includes(data.watched.runId)) refreshWatched(data);
  data.head = changes.revision;
  return true;
}

function reloadAll(data: ViewerData, head: number): boolean {
  data.runs = listRunRows(data.store, { all: data.all, limit: LIST_LIMIT });
  data.progress = readProgress(data.store, data.runs.filter(isActive).map((r) => r.runId));
  if (data.watched) {
    data.watched.attempts = [];
    refreshWatched(data);
  }
  data.head = head;
  data.loaded = true;
  return true;
}

function patchRuns(data: ViewerData, runIds: string[]): void {
  if (runIds.length === 0) return;
  const fresh = new Map(readRunRows(data.store, runIds).map((r) => [r.runId, r]));
  // A run a delta names that has no row any more was pruned (retention's `run.pruned` delta):
  // it leaves the list like a changed run, and nothing takes its place.
  const named = new Set(runIds);
  const kept = data.runs.filter((r) => !named.has(r.runId));
  const added = [...fresh.values()].filter((r) => data.all || isActive(r));
  data.runs = [...kept, ...added].sort(newestFirst).slice(0, LIST_LIMIT);
  const active = [...fresh.values()].filter(isActive).map((r) => r.runId);
  for (const id of runIds) data.progress.delete(id);
  for (const [id, rows] of readProgress(data.store, active)) data.progress.set(id, rows);
  if (data.watched && fresh.has(data.watched.runId)) {
    data.watched.row = fresh.get(data.watched.runId)!;
  }
}

function newestFirst(a: RunRow, b: RunRow): number {
  return b.createdAt - a.createdAt || (a.runId < b.runId ? 1 : a.runId > b.runId ? -1 : 0);
}

export function isActive(run: RunRow): boolean {
  return !TERMINAL.has(run.state);
}

/** Switches the list between active runs and all runs (a bounded reload). */
export function setListFilter(data: ViewerData, all: boolean): void {
  if (data.all === all) return;
  data.all = all;
  data.loaded = false;
}

/** Starts following one run: its attempts, row and graph are kept current by each tick. */
export function watchRun(data: ViewerData, runId: string): void {
  if (data.watched?.runId === runId) return;
  data.watched = {
    runId,
    row: null,
    attempts: [],
    graph: null,
    output: undefined,
    lastOutput: null,
  };
  if (data.loaded) refreshWatched(data);
}

export function unwatchRun(data: ViewerData): void {
  data.watched = null;
}

function refreshWatched(data: ViewerData): void {
  const w = data.watched!;
  const row = data.runs.find((r) => r.runId === w.runId) ?? readRunRows(data.store, [w.runId])[0];
  w.row = row ?? null;
  if (!row) {
    // Pruned (or never there): nothing of it is shown any more.
    w.attempts = [];
    w.output = undefined;
    return;
  }
  // Finished attempts never change: re-read from the first open one (or after the last).
  const open = w.attempts.findIndex((a) => OPEN_ATTEMPT.has(a.state));
  const keep = open < 0 ? w.attempts.length : open;
  let from = keep === 0 ? 1 : w.attempts[keep - 1].sequence + 1;
  const next = w.attempts.slice(0, keep);
  for (;;) {
    const page = listAttemptRows(data.store, w.runId, from, ATTEMPT_PAGE);
    next.push(...page);
    if (page.length < ATTEMPT_PAGE) break;
    from = page[page.length - 1].sequence + 1;
  }
  w.attempts = next;
  w.graph = graphFor(data, row.definitionDigest);
  if (row.state === "completed" && w.output === undefined) {
    w.output = readRunOutput(data.store, w.runId) ?? null;
  }
  if (!data.progress.has(row.runId) && isActive(row)) {
    const progress = readProgress(data.store, [row.runId]).get(row.runId);
    if (progress) data.progress.set(row.runId, progress);
  }
}

/**
 * The watched run's running step's last output line, from its file (no database read: a step
 * prints without a commit). True when it changed.
 */
function refreshLastOutput(data: ViewerData): boolean {
  const w = data.watched;
  if (!w) return false;
  const open = w.attempts.at(-1);
  const before = w.lastOutput;
  const text = open?.state === "running"
    ? lastStepLine(join(dirname(data.store.path), "workers"), open.attemptId)
    : null;
  w.lastOutput = text === null ? null : { attemptId: open!.attemptId, line: text };
  return before?.line !== w.lastOutput?.line || before?.attemptId !== w.lastOutput?.attemptId;
}

function graphFor(data: ViewerData, digest: string): WorkflowGraph | null {
  if (!data.graphs.has(digest)) {
    const snapshot = parseDefinitionSnapshot(readDefinitionSnapshot(data.store, digest));
    data.graphs.set(digest, snapshot ? graphFromSnapshot(snapshot) : null);
  }
  return data.graphs.get(digest)!;
}

/**
 * The inspector's facts for one attempt of the watched run. A finished attempt never changes,
 * so it is read once; an open one again only after its run's revision moved (it may gain an
 * interaction or decision state without changing its own).
 */
export function attemptDetail(data: ViewerData, attempt: AttemptRow): AttemptDetail | undefined {
  const revision = data.watched?.row?.revision ?? 0;
  const cached = data.details.get(attempt.attemptId);
  const fresh = cached !== undefined && cached.state === attempt.state &&
    (!OPEN_ATTEMPT.has(attempt.state) || cached.revision === revision);
  if (fresh) return cached.detail;
  const detail = readAttemptDetail(data.store, attempt.attemptId);
  if (!detail) return undefined;
  data.details.delete(attempt.attemptId);
  data.details.set(attempt.attemptId, { state: attempt.state, revision, detail });
  while (data.details.size > DETAIL_CACHE) data.details.delete(data.details.keys().next().value!);
  return detail;
}
