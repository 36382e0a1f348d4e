/**
 * The graph the renderer draws: nodes and labelled edges, built from a run's definition
 * snapshot. Switch edges become one edge per case, labelled with the case value; included
 * workflows keep their flattened ids (`mount/child`) and show as `mount › child`.
 */
import type { DefinitionSnapshot } from "../protocol/definition-snapshot.ts";

export interface GraphNode {
  id: string;
  /** What a card shows as its title. */
  label: string;
  kind: string;
  /** The include mount path (`review/`), empty for root nodes. */
  scope: string;
  /** What the author says the node does (`statusDetail`), shown on its card; null for none. */
  detail: string | null;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** The switch case that takes this edge; null for a plain edge. */
  label: string | null;
}

export interface WorkflowGraph {
  startAt: string;
  /** In discovery order from `startAt` (breadth first, then any left unreached). */
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export function graphFromSnapshot(snapshot: DefinitionSnapshot): WorkflowGraph {
  const edges: GraphEdge[] = [];
  const out = new Map<string, GraphEdge[]>();
  for (const [from, edge] of Object.entries(snapshot.edges)) {
    const list: GraphEdge[] = edge.kind === "plain"
      ? [{ from, to: edge.to, label: null }]
      : mergeCases(from, edge.cases);
    out.set(from, list);
    edges.push(...list);
  }
  const order: string[] = [];
  const seen = new Set<string>();
  const queue = [snapshot.startAt];
  while (queue.length > 0) {
    const id = queue.shift()!;
    if (seen.has(id) || !(id in snapshot.nodes)) continue;
    seen.add(id);
    order.push(id);
    for (const e of out.get(id) ?? []) queue.push(e.to);
  }
  for (const id of Object.keys(snapshot.nodes)) if (!seen.has(id)) order.push(id);
  const nodes = order.map((id) =>
    nodeOf(id, snapshot.nodes[id].kind, snapshot.nodes[id].statusDetail)
  );
  const known = new Set(order);
  return {
    startAt: snapshot.startAt,
    nodes,
    edges: edges.filter((e) => known.has(e.from) && known.has(e.to)),
  };
}

/** Cases that lead to the same target share one edge, labelled `a|b`. */
function mergeCases(from: string, cases: Record<string, string>): GraphEdge[] {
  const byTarget = new Map<string, string[]>();
  for (const [value, to] of Object.entries(cases)) {
    const list = byTarget.get(to) ?? [];
    list.push(value);
    byTarget.set(to, list);
  }
  return [...byTarget].map(([to, values]) => ({ from, to, label: values.join("|") }));
}

function nodeOf(id: string, kind: string, statusDetail: string | undefined): GraphNode {
  const slash = id.lastIndexOf("/");
  const scope = slash < 0 ? "" : id.slice(0, slash + 1);
  const local = id.slice(slash + 1);
  const label = scope === "" ? local : `${scope.slice(0, -1).split("/").join(" › ")} › ${local}`;
  const detail = statusDetail?.replace(/\s+/g, " ").trim() || null;
  return { id, label, kind, scope, detail };
}
