/**
 * Whether a run's committed history still fits a workflow graph: the check a fork
 * (`run.rerun --source current`) and `run.resume --accept-source` make before a run continues
 * under a changed workflow file. It reads only the function-free definition snapshot, so the host
 * makes it without loading workflow code.
 *
 * The history fits when every node on its path still exists with the same kind and every step
 * from one node to the next is still an edge (a plain edge to it, or a switch with a case leading
 * to it). Callbacks, prompts and routing values may have changed: that is the point of the edit.
 */
import type { DefinitionSnapshot } from "../protocol/definition-snapshot.ts";

/** One node visit on the path, in order. */
export interface PathStep {
  nodeId: string;
  nodeKind: string;
}

export type HistoryFit =
  | { fits: true }
  | {
    fits: false;
    /** The first node on the path that no longer fits, and its index (`path.length`: `next`). */
    nodeId: string;
    index: number;
    /** The index of the last step a fork may rerun from (it and all before it fit), or -1. */
    rerunFrom: number;
    /** Why, in a user's words. */
    reason: string;
  };

/**
 * Checks `path` (the adopted steps, in order) and then `next`, the node the run goes on with
 * (a fork's `--from` node; null when the run routes on by itself): `next` must exist and be
 * reachable from the path's last step, but may have another kind.
 */
export function historyFit(
  graph: Pick<DefinitionSnapshot, "nodes" | "edges" | "startAt">,
  path: readonly PathStep[],
  next: string | null,
): HistoryFit {
  const nodes = graph.nodes as Record<string, { kind: string }>;
  for (let i = 0; i < path.length; i++) {
    const step = path[i];
    const node = Object.hasOwn(nodes, step.nodeId) ? nodes[step.nodeId] : undefined;
    if (!node) {
      return misfit(
        step.nodeId,
        i,
        i - 1,
        `node "${step.nodeId}" no longer exists in the workflow`,
      );
    }
    if (node.kind !== step.nodeKind) {
      // A fork may rerun the changed node itself: only the nodes before it are adopted.
      return misfit(
        step.nodeId,
        i,
        i,
        `node "${step.nodeId}" was ${article(step.nodeKind)} node and is now ${
          article(node.kind)
        } node`,
      );
    }
    if (i === 0 && step.nodeId !== graph.startAt) {
      return misfit(
        step.nodeId,
        0,
        -1,
        `the workflow now starts at "${graph.startAt}", not at "${step.nodeId}"`,
      );
    }
    if (i > 0 && !hasEdge(graph, path[i - 1].nodeId, step.nodeId)) {
      return misfit(
        step.nodeId,
        i,
        i - 1,
        `there is no longer an edge from "${path[i - 1].nodeId}" to "${step.nodeId}"`,
      );
    }
  }
  if (next === null) return { fits: true };
  if (!Object.hasOwn(nodes, next)) {
    return misfit(
      next,
      path.length,
      path.length - 1,
      `node "${next}" no longer exists in the workflow`,
    );
  }
  const last = path.at(-1);
  if (last && !hasEdge(graph, last.nodeId, next)) {
    return misfit(
      next,
      path.length,
      path.length - 1,
      `there is no longer an edge from "${last.nodeId}" to "${next}"`,
    );
  }
  return { fits: true };
}

function hasEdge(graph: Pick<DefinitionSnapshot, "edges">, from: string, to: string): boolean {
  const edges = graph.edges as DefinitionSnapshot["edges"];
  const edge = Object.hasOwn(edges, from) ? edges[from] : undefined;
  if (!edge) return false;
  if (edge.kind === "plain") return edge.to === to;
  return Object.values(edge.cases).includes(to);
}

function misfit(nodeId: string, index: number, rerunFrom: number, reason: string): HistoryFit {
  return { fits: false, nodeId, index, rerunFrom, reason };
}

function article(kind: string): string {
  return `${/^[aeiou]/i.test(kind) ? "an" : "a"} ${kind}`;
}
