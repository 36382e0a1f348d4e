/**
 * What the graph shows at a replay position: each node's state and attempt count, the active
 * node, and the edges the run took, all as of step `position` (1-based) of the attempt list.
 * `position` null means "live": every attempt so far. Pure: the caller passes `now` for timers.
 */
import { formatDuration, type NodeState } from "./format.ts";
import type { WorkflowGraph } from "./graph-model.ts";

/** The attempt facts replay needs (structurally a subset of the state's attempt summary). */
export interface ReplayAttempt {
  nodeId: string;
  state: string;
  startedAt: number;
  finishedAt: number | null;
  deadlineAt: number | null;
}

export interface NodeStatus {
  state: NodeState;
  /** Attempts of this node up to the position. */
  attempts: number;
  /** `◷ 12s` (running, with `/15m` when a deadline is set) or the last attempt's duration. */
  timer: string | null;
}

export interface GraphScene {
  statuses: ReadonlyMap<string, NodeStatus>;
  /** The node of the step at the position (replay), or the open attempt's node (live). */
  active: string | null;
  /** Edges taken, as `from>to` keys. */
  taken: ReadonlySet<string>;
}

const OPEN = new Set(["running", "waiting"]);

export function edgeKey(from: string, to: string): string {
  return `${from}>${to}`;
}

export interface SceneOptions {
  /** The run's graph: a node the run went past is `skipped` instead of `pending`. */
  graph?: WorkflowGraph | null;
  /** The run has ended and the position is its last step: every node not attempted was skipped. */
  ended?: boolean;
}

export function sceneAt(
  attempts: readonly ReplayAttempt[],
  position: number | null,
  now: number,
  options: SceneOptions = {},
): GraphScene {
  const end = position === null
    ? attempts.length
    : Math.max(0, Math.min(position, attempts.length));
  const statuses = new Map<string, NodeStatus>();
  const taken = new Set<string>();
  for (let i = 0; i < end; i++) {
    const a = attempts[i];
    const before = statuses.get(a.nodeId);
    statuses.set(a.nodeId, {
      state: toNodeState(a.state),
      attempts: (before?.attempts ?? 0) + 1,
      timer: timerOf(a, now),
    });
    if (i > 0) taken.add(edgeKey(attempts[i - 1].nodeId, a.nodeId));
  }
  if (options.graph) markSkipped(options.graph, attempts.slice(0, end), statuses, taken, options);
  let active: string | null = null;
  if (position !== null && end > 0) active = attempts[end - 1].nodeId;
  else if (end > 0 && OPEN.has(attempts[end - 1].state)) active = attempts[end - 1].nodeId;
  return { statuses, active, taken };
}

/**
 * Nodes never attempted that the run went past: every way into them comes from a node that ran,
 * finished, was followed by some other step and did not take the edge (or from a node skipped
 * itself); after the run ended, every node not attempted. Until then they stay `pending`: the
 * newest step's successor is not known yet.
 */
function markSkipped(
  graph: WorkflowGraph,
  attempts: readonly ReplayAttempt[],
  statuses: Map<string, NodeStatus>,
  taken: ReadonlySet<string>,
  options: SceneOptions,
): void {
  const skipped: NodeStatus = { state: "skipped", attempts: 0, timer: null };
  if (options.ended) {
    for (const node of graph.nodes) if (!statuses.has(node.id)) statuses.set(node.id, skipped);
    return;
  }
  const last = new Map<string, number>();
  attempts.forEach((a, i) => last.set(a.nodeId, i));
  const into = new Map<string, string[]>();
  for (const e of graph.edges) into.set(e.to, [...(into.get(e.to) ?? []), e.from]);
  const wentPast = (from: string, to: string) => {
    if (statuses.get(from)?.state === "skipped") return true;
    const i = last.get(from);
    return i !== undefined && i < attempts.length - 1 && !OPEN.has(attempts[i].state) &&
      !taken.has(edgeKey(from, to));
  };
  for (let changed = true; changed;) {
    changed = false;
    for (const node of graph.nodes) {
      const froms = into.get(node.id) ?? [];
      if (statuses.has(node.id) || node.id === graph.startAt || froms.length === 0) continue;
      if (froms.every((from) => wentPast(from, node.id))) {
        statuses.set(node.id, skipped);
        changed = true;
      }
    }
  }
}

export function timerOf(a: ReplayAttempt, now: number): string | null {
  if (a.finishedAt !== null) return formatDuration(a.finishedAt - a.startedAt);
  if (!OPEN.has(a.state)) return null;
  const elapsed = formatDuration(now - a.startedAt);
  return a.deadlineAt !== null
    ? `${elapsed}/${formatDuration(a.deadlineAt - a.startedAt)}`
    : elapsed;
}

function toNodeState(state: string): NodeState {
  switch (state) {
    case "running":
    case "waiting":
    case "ok":
    case "failed":
    case "timed_out":
    case "cancelled":
    case "interrupted":
      return state;
    default:
      return "pending";
  }
}
