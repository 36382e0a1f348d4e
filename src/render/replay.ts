/**
 * What the graph shows at a replay position: each node's state and attempt count, the active
 * node, and the edges the run took, all as of step `position` (1-based) of the attempt list.
 * `position` null means "live": every attempt so far. Pure: the caller passes `now` for timers.
 */
import { formatDuration, type NodeState } from "./format.ts";

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

export function sceneAt(
  attempts: readonly ReplayAttempt[],
  position: number | null,
  now: number,
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
  let active: string | null = null;
  if (position !== null && end > 0) active = attempts[end - 1].nodeId;
  else if (end > 0 && OPEN.has(attempts[end - 1].state)) active = attempts[end - 1].nodeId;
  return { statuses, active, taken };
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
