/**
 * Layered layout of a workflow graph (a small Sugiyama pipeline):
 * 1. depth-first search from the start node marks back edges (loops), which are drawn around
 *    the layers instead of through them;
 * 2. longest-path layering of what remains (a DAG): every node sits below all its predecessors;
 * 3. an edge spanning several layers gets a virtual pass-through cell in each layer between;
 * 4. barycenter sweeps (down, then up) reorder each layer to cut crossings, ties kept stable.
 * Pure and deterministic: the same graph always gives the same layout.
 */
import type { GraphEdge, WorkflowGraph } from "./graph-model.ts";

export interface LayoutCell {
  /** A node id, or `~<edge index>@<layer>` for a virtual pass-through cell. */
  id: string;
  /** The edge a virtual cell carries; -1 for a real node. */
  edge: number;
}

export interface ForwardEdge {
  index: number;
  edge: GraphEdge;
  /** Cell ids from the source to the target, virtual cells between. */
  path: string[];
}

export interface GraphLayout {
  layers: LayoutCell[][];
  layerOf: Map<string, number>;
  forward: ForwardEdge[];
  /** Edges that close a loop (target at or above the source), self-loops included. */
  back: GraphEdge[];
}

const SWEEPS = 4;

export function layoutGraph(graph: WorkflowGraph): GraphLayout {
  const ids = graph.nodes.map((n) => n.id);
  const out = new Map<string, { edge: GraphEdge; index: number }[]>();
  graph.edges.forEach((edge, index) => {
    const list = out.get(edge.from) ?? [];
    list.push({ edge, index });
    out.set(edge.from, list);
  });
  const backIndexes = findBackEdges(graph.startAt, ids, out);
  const forwardEdges = graph.edges
    .map((edge, index) => ({ edge, index }))
    .filter((e) => !backIndexes.has(e.index));
  const layerOf = longestPathLayers(ids, forwardEdges.map((e) => e.edge));

  const layerCount = Math.max(0, ...layerOf.values()) + 1;
  const layers: LayoutCell[][] = Array.from({ length: layerCount }, () => []);
  for (const id of ids) layers[layerOf.get(id)!].push({ id, edge: -1 });
  const forward: ForwardEdge[] = forwardEdges.map(({ edge, index }) => {
    const path = [edge.from];
    for (let l = layerOf.get(edge.from)! + 1; l < layerOf.get(edge.to)!; l++) {
      const id = `~${index}@${l}`;
      layers[l].push({ id, edge: index });
      layerOf.set(id, l);
      path.push(id);
    }
    path.push(edge.to);
    return { index, edge, path };
  });
  orderLayers(layers, forward);
  return {
    layers,
    layerOf,
    forward,
    back: graph.edges.filter((_, i) => backIndexes.has(i)),
  };
}

function findBackEdges(
  start: string,
  ids: string[],
  out: Map<string, { edge: GraphEdge; index: number }[]>,
): Set<number> {
  const back = new Set<number>();
  const state = new Map<string, "open" | "done">();
  const visit = (root: string) => {
    // Iterative DFS: deep linear workflows must not overflow the stack.
    const stack: { id: string; next: number }[] = [{ id: root, next: 0 }];
    state.set(root, "open");
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const edges = out.get(top.id) ?? [];
      if (top.next >= edges.length) {
        state.set(top.id, "done");
        stack.pop();
        continue;
      }
      const { edge, index } = edges[top.next++];
      const s = state.get(edge.to);
      if (s === "open") back.add(index);
      else if (s === undefined) {
        state.set(edge.to, "open");
        stack.push({ id: edge.to, next: 0 });
      }
    }
  };
  if (ids.includes(start)) visit(start);
  for (const id of ids) if (!state.has(id)) visit(id);
  return back;
}

function longestPathLayers(ids: string[], edges: GraphEdge[]): Map<string, number> {
  const indegree = new Map(ids.map((id) => [id, 0]));
  const succ = new Map<string, string[]>();
  for (const e of edges) {
    indegree.set(e.to, (indegree.get(e.to) ?? 0) + 1);
    const list = succ.get(e.from) ?? [];
    list.push(e.to);
    succ.set(e.from, list);
  }
  const layer = new Map(ids.map((id) => [id, 0]));
  const ready = ids.filter((id) => indegree.get(id) === 0);
  while (ready.length > 0) {
    const id = ready.shift()!;
    for (const to of succ.get(id) ?? []) {
      layer.set(to, Math.max(layer.get(to)!, layer.get(id)! + 1));
      const d = indegree.get(to)! - 1;
      indegree.set(to, d);
      if (d === 0) ready.push(to);
    }
  }
  return layer;
}

function orderLayers(layers: LayoutCell[][], forward: ForwardEdge[]): void {
  const up = new Map<string, string[]>();
  const down = new Map<string, string[]>();
  for (const f of forward) {
    for (let i = 0; i + 1 < f.path.length; i++) {
      push(down, f.path[i], f.path[i + 1]);
      push(up, f.path[i + 1], f.path[i]);
    }
  }
  const position = new Map<string, number>();
  const index = (layer: LayoutCell[]) => layer.forEach((c, i) => position.set(c.id, i));
  layers.forEach(index);
  const sweep = (layer: LayoutCell[], neighbours: Map<string, string[]>) => {
    const keyed = layer.map((cell, i) => {
      const ns = neighbours.get(cell.id) ?? [];
      const bary = ns.length === 0 ? i : ns.reduce((s, n) => s + position.get(n)!, 0) / ns.length;
      return { cell, bary, i };
    });
    keyed.sort((a, b) => a.bary - b.bary || a.i - b.i);
    layer.splice(0, layer.length, ...keyed.map((k) => k.cell));
    index(layer);
  };
  for (let s = 0; s < SWEEPS; s++) {
    for (let l = 1; l < layers.length; l++) sweep(layers[l], up);
    for (let l = layers.length - 2; l >= 0; l--) sweep(layers[l], down);
  }
}

function push(map: Map<string, string[]>, key: string, value: string): void {
  const list = map.get(key) ?? [];
  list.push(value);
  map.set(key, list);
}
