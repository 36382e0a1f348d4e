/**
 * Draws a workflow graph at a replay position. `box` style: one bordered card per node
 * (title, kind badge, the author's `statusDetail` when a node of the graph has one, state,
 * attempts `↻ n`, timer `◷`, whole: the state word gives way first), layers top to bottom, switch cases as
 * edge labels, loops routed up a right-hand gutter, the taken path styled `taken` and the active
 * card drawn heavy. `line` style: one line per node, for narrow screens. `auto` picks the box
 * style when it fits the width (shrinking titles first) and the line style otherwise.
 */
import { Canvas, type Weight } from "./canvas.ts";
import { kindGlyph, type NodeState, stateGlyph, stateWord } from "./format.ts";
import type { GraphEdge, GraphNode, WorkflowGraph } from "./graph-model.ts";
import { type GraphLayout, layoutGraph } from "./layout.ts";
import { edgeKey, type GraphScene, type NodeStatus } from "./replay.ts";
import { concat, type Style, type StyledLine, textWidth, truncate } from "./styled-line.ts";

export type GraphStyle = "auto" | "box" | "line";

export interface RenderGraphOptions {
  /** Columns available. */
  width: number;
  /** @default "auto" */
  style?: GraphStyle;
}

/** Card rows: borders, title, rule, badge, status; one more for details when a node has one. */
const CARD_H = 6;
const GAP_X = 2;
const MIN_INNER = 17;
const MAX_INNER = 22;
/** Below this title width `auto` draws lines instead; `box` goes down to FORCED_INNER. */
const SMALLEST_INNER = 8;
const FORCED_INNER = 5;
const MAX_LABEL = 14;

const PENDING: NodeStatus = { state: "pending", attempts: 0, timer: null };

export function renderGraph(
  graph: WorkflowGraph,
  scene: GraphScene,
  options: RenderGraphOptions,
): StyledLine[] {
  const style = options.style ?? "auto";
  if (graph.nodes.length === 0) return [];
  const layout = layoutGraph(graph);
  if (style !== "line") {
    const smallest = style === "box" ? FORCED_INNER : SMALLEST_INNER;
    for (let inner = MAX_INNER; inner >= smallest; inner--) {
      const plan = planBoxes(graph, layout, inner);
      if (plan.width <= options.width || (style === "box" && inner === smallest)) {
        return drawBoxes(graph, layout, scene, plan);
      }
    }
  }
  return drawLines(graph, layout, scene);
}

export function stateStyle(state: NodeState): Style {
  switch (state) {
    case "running":
      return "running";
    case "waiting":
      return "waiting";
    case "ok":
      return "ok";
    case "failed":
    case "timed_out":
      return "failed";
    case "cancelled":
    case "interrupted":
      return "warn";
    default:
      return "muted";
  }
}

interface Placed {
  x: number;
  w: number;
  top: number;
  /** Column of the entry and exit points. */
  cx: number;
}

interface Track {
  kind: "backOut" | "forward" | "backIn";
  cell: string;
  row: number;
}

interface BoxPlan {
  inner: number;
  /** Rows of every card (CARD_H, + 1 when some node has a detail line). */
  cardH: number;
  width: number;
  height: number;
  placed: Map<string, Placed>;
  /** Per gap (index = layer above it + 1): its tracks and arrow row. */
  gaps: { tracks: Track[]; arrowRow: number }[];
  gutters: { x: number; label: string | null }[];
}

function planBoxes(graph: WorkflowGraph, layout: GraphLayout, maxInner: number): BoxPlan {
  const cardH = CARD_H + (graph.nodes.some((n) => n.detail !== null) ? 1 : 0);
  const nodeById = new Map(graph.nodes.map((n) => [n.id, n]));
  const inner = (n: GraphNode) =>
    Math.min(
      maxInner,
      Math.max(
        Math.min(MIN_INNER, maxInner),
        textWidth(n.label),
        textWidth(badge(n)),
        textWidth(n.detail ?? ""),
      ),
    );
  const widthOf = (id: string) => {
    const n = nodeById.get(id);
    return n ? inner(n) + 4 : 1;
  };
  const layerWidths = layout.layers.map((cells) =>
    cells.reduce((s, c) => s + widthOf(c.id), 0) + GAP_X * Math.max(0, cells.length - 1)
  );
  const contentW = Math.max(0, ...layerWidths);
  const preds = new Map<string, string[]>();
  for (const f of layout.forward) {
    for (let i = 0; i + 1 < f.path.length; i++) {
      preds.set(f.path[i + 1], [...(preds.get(f.path[i + 1]) ?? []), f.path[i]]);
    }
  }

  // Tracks per gap: gap g lies below layer g - 1 and above layer g (gap 0 is above layer 0).
  const L = layout.layers.length;
  const gapTracks: Track[][] = Array.from({ length: L + 1 }, () => []);
  const addTrack = (gap: number, kind: Track["kind"], cell: string) => {
    if (!gapTracks[gap].some((t) => t.kind === kind && t.cell === cell)) {
      gapTracks[gap].push({ kind, cell, row: 0 });
    }
  };
  for (const b of layout.back) addTrack(layout.layerOf.get(b.from)! + 1, "backOut", b.from);
  for (const f of layout.forward) {
    for (let i = 0; i + 1 < f.path.length; i++) {
      addTrack(layout.layerOf.get(f.path[i])! + 1, "forward", f.path[i]);
    }
  }
  for (const b of layout.back) addTrack(layout.layerOf.get(b.to)!, "backIn", b.to);

  const placed = new Map<string, Placed>();
  const gaps: BoxPlan["gaps"] = [];
  let y = 0;
  const order = { backOut: 0, forward: 1, backIn: 2 };
  for (let g = 0; g <= L; g++) {
    const tracks = gapTracks[g];
    const needsArrow = g < L && tracks.some((t) => t.kind !== "backOut");
    for (const t of tracks) t.row = y++;
    const arrowRow = needsArrow ? y++ : -1;
    if (g > 0 && g < L && tracks.length === 0) y++;
    gaps.push({ tracks, arrowRow });
    if (g === L) break;
    // Each cell goes under the mean column of its predecessors (so chains run straight),
    // pushed right where it would overlap its left neighbour; a layer with no predecessors
    // is centred.
    let left = Math.floor((contentW - layerWidths[g]) / 2);
    let prevRight = -GAP_X;
    for (const cell of layout.layers[g]) {
      const w = widthOf(cell.id);
      // Real predecessors only when there are some: a long edge joins from the side.
      const all = preds.get(cell.id) ?? [];
      const real = all.filter((id) => !id.startsWith("~"));
      const ps = (real.length > 0 ? real : all).map((id) => placed.get(id)!.cx);
      const want = ps.length > 0
        ? Math.round(ps.reduce((a, b) => a + b, 0) / ps.length) - Math.floor(w / 2)
        : left;
      const x = Math.max(0, want, prevRight + GAP_X);
      placed.set(cell.id, { x, w, top: y, cx: x + Math.floor(w / 2) });
      prevRight = x + w;
      left = x + w + GAP_X;
    }
    y += cardH;
  }
  const contentRight = Math.max(0, ...[...placed.values()].map((p) => p.x + p.w));
  // Order each gap's tracks once every cell has its column: loops out, forward, loops in.
  for (const gap of gaps) {
    const x = (id: string) => placed.get(id)?.cx ?? 0;
    const rows = gap.tracks.map((t) => t.row).sort((a, b) => a - b);
    gap.tracks.sort((a, b) => order[a.kind] - order[b.kind] || x(a.cell) - x(b.cell));
    gap.tracks.forEach((t, i) => (t.row = rows[i]));
  }

  const gutters: BoxPlan["gutters"] = [];
  let gx = contentRight + 1;
  for (const b of layout.back) {
    const label = b.label === null ? null : truncate(b.label, MAX_LABEL);
    gutters.push({ x: gx, label });
    gx += 2 + (label === null ? 0 : textWidth(label) + 1);
  }
  const width = layout.back.length > 0 ? gx - 1 : contentRight;
  return { inner: maxInner, cardH, width, height: y, placed, gaps, gutters };
}

function drawBoxes(
  graph: WorkflowGraph,
  layout: GraphLayout,
  scene: GraphScene,
  plan: BoxPlan,
): StyledLine[] {
  const canvas = new Canvas(Math.max(1, plan.width), Math.max(1, plan.height));
  const arrows: { x: number; y: number; style: Style }[] = [];
  const labels: { edge: GraphEdge; x: number; rows: number[]; style: Style }[] = [];
  const trackRow = (gap: number, kind: Track["kind"], cell: string) =>
    plan.gaps[gap].tracks.find((t) => t.kind === kind && t.cell === cell)!.row;
  const bottom = (p: Placed) => p.top + plan.cardH - 1;
  const isTaken = (e: GraphEdge) => scene.taken.has(edgeKey(e.from, e.to));

  // Edges: untaken first so the taken path wins the cells they share.
  const forward = [...layout.forward].sort((a, b) =>
    Number(isTaken(a.edge)) - Number(isTaken(b.edge))
  );
  for (const f of forward) {
    const style: Style = isTaken(f.edge) ? "taken" : "edge";
    for (let i = 0; i + 1 < f.path.length; i++) {
      const src = plan.placed.get(f.path[i])!;
      const dst = plan.placed.get(f.path[i + 1])!;
      const gap = layout.layerOf.get(f.path[i])! + 1;
      const ty = trackRow(gap, "forward", f.path[i]);
      canvas.vline(src.cx, bottom(src), ty, 1, style);
      canvas.hline(src.cx, dst.cx, ty, 1, style);
      const real = i + 1 === f.path.length - 1;
      canvas.vline(dst.cx, ty, real ? dst.top - 1 : dst.top, 1, style);
      if (!real) canvas.vline(dst.cx, dst.top, bottom(dst), 1, style);
      else {
        arrows.push({ x: dst.cx, y: dst.top - 1, style });
        if (f.edge.label !== null) {
          const rows = [];
          for (let r = dst.top - 1; r > ty; r--) rows.push(r);
          labels.push({ edge: f.edge, x: dst.cx, rows, style });
        }
      }
    }
  }
  const back = layout.back.map((edge, i) => ({ edge, gutter: plan.gutters[i] }))
    .sort((a, b) => Number(isTaken(a.edge)) - Number(isTaken(b.edge)));
  for (const { edge, gutter } of back) {
    const style: Style = isTaken(edge) ? "taken" : "edge";
    const src = plan.placed.get(edge.from)!;
    const dst = plan.placed.get(edge.to)!;
    const oy = trackRow(layout.layerOf.get(edge.from)! + 1, "backOut", edge.from);
    const iy = trackRow(layout.layerOf.get(edge.to)!, "backIn", edge.to);
    canvas.vline(src.cx, bottom(src), oy, 1, style);
    canvas.hline(src.cx, gutter.x, oy, 1, style);
    canvas.vline(gutter.x, oy, iy, 1, style);
    canvas.hline(gutter.x, dst.cx, iy, 1, style);
    canvas.vline(dst.cx, iy, dst.top - 1, 1, style);
    arrows.push({ x: dst.cx, y: dst.top - 1, style });
    if (gutter.label !== null) {
      const mid = Math.floor((oy + iy) / 2);
      canvas.textIfFree(gutter.x + 1, mid, ` ${gutter.label}`, "label");
    }
  }

  for (const node of graph.nodes) {
    const p = plan.placed.get(node.id);
    if (p) {
      const status = scene.statuses.get(node.id) ?? PENDING;
      drawCard(canvas, node, p, plan.cardH, status, scene.active === node.id);
    }
  }
  for (const a of arrows) canvas.text(a.x, a.y, "▼", a.style);
  for (const l of labels) placeLabel(canvas, l.x, l.rows, truncate(l.edge.label!, MAX_LABEL));
  return canvas.toLines();
}

/** Beside the arrow's column, right then left, on the first row with room. */
function placeLabel(canvas: Canvas, x: number, rows: number[], label: string): void {
  const w = textWidth(label);
  for (const r of rows) {
    // One blank column of margin on the far side too, so a label never touches a line.
    if (canvas.isFree(x + 1, r, w + 2)) return canvas.text(x + 1, r, ` ${label}`, "label");
    if (canvas.isFree(x - w - 2, r, w + 2)) return canvas.text(x - w - 1, r, `${label} `, "label");
  }
}

function badge(node: GraphNode): string {
  return `${kindGlyph(node.kind)} ${node.kind}`;
}

function drawCard(
  canvas: Canvas,
  node: GraphNode,
  p: Placed,
  height: number,
  status: NodeStatus,
  active: boolean,
): void {
  const weight: Weight = active ? 2 : 1;
  const border: Style = active ? "active" : stateStyle(status.state);
  canvas.box(p.x, p.top, p.w, height, weight, border);
  canvas.hline(p.x, p.x + p.w - 1, p.top + 2, weight, border);
  const inner = p.w - 4;
  const title = truncate(node.label, inner);
  const pad = Math.floor((inner - textWidth(title)) / 2);
  canvas.text(p.x + 2 + pad, p.top + 1, title, active ? "active" : "title");
  canvas.text(p.x + 2, p.top + 3, truncate(badge(node), inner), "muted");
  if (height > CARD_H && node.detail !== null) {
    canvas.text(p.x + 2, p.top + 4, truncate(node.detail, inner), "muted");
  }
  canvas.text(p.x + 2, p.top + height - 2, statusText(status, inner), stateStyle(status.state));
}

/**
 * `◐ running ↻ 2 ◷ 1m05s/15m00s` in `width` columns. The timer is what changes, so it is never
 * cut: the state word goes first (the glyph and the border say the state), then the deadline,
 * then the attempt count.
 */
function statusText(status: NodeStatus, width: number): string {
  const glyph = stateGlyph(status.state);
  const word = stateWord(status.state);
  const again = status.attempts > 1 ? `↻ ${status.attempts}` : "";
  const timer = status.timer === null ? "" : `◷ ${status.timer}`;
  const elapsed = status.timer === null ? "" : `◷ ${status.timer.split("/")[0]}`;
  const forms = [
    [`${glyph} ${word}`, again, timer],
    [glyph, again, timer],
    [glyph, again, elapsed],
    [glyph, elapsed],
  ].map((parts) => parts.filter((p) => p !== "").join(" "));
  return forms.find((f) => textWidth(f) <= width) ?? truncate(forms[forms.length - 1], width);
}

function drawLines(graph: WorkflowGraph, layout: GraphLayout, scene: GraphScene): StyledLine[] {
  const nodeById = new Map(graph.nodes.map((n) => [n.id, n]));
  const order = layout.layers.flatMap((cells) => cells.filter((c) => c.edge < 0).map((c) => c.id));
  const backs = new Set(layout.back.map((e) => edgeKey(e.from, e.to)));
  const out = new Map<string, GraphEdge[]>();
  for (const e of graph.edges) out.set(e.from, [...(out.get(e.from) ?? []), e]);
  const lines: StyledLine[] = [];
  order.forEach((id, i) => {
    const node = nodeById.get(id)!;
    const status = scene.statuses.get(id) ?? PENDING;
    const active = scene.active === id;
    const extra = [
      status.attempts > 1 ? ` ↻ ${status.attempts}` : "",
      status.timer !== null ? ` ◷ ${status.timer}` : "",
      node.detail !== null ? ` · ${node.detail}` : "",
    ].join("");
    lines.push(concat(
      { text: active ? "▶ " : "  ", style: active ? "active" : "" },
      { text: stateGlyph(status.state), style: stateStyle(status.state) },
      { text: ` ${kindGlyph(node.kind)} `, style: "muted" },
      { text: node.label, style: active ? "active" : "title" },
      { text: extra, style: stateStyle(status.state) },
    ));
    for (const e of out.get(id) ?? []) {
      const implied = e.label === null && order[i + 1] === e.to &&
        !backs.has(edgeKey(e.from, e.to));
      if (implied) continue;
      const style: Style = scene.taken.has(edgeKey(e.from, e.to)) ? "taken" : "edge";
      const target = nodeById.get(e.to)?.label ?? e.to;
      lines.push(concat(
        { text: "    ", style: "" },
        {
          text: e.label === null ? "→ " : `${e.label} → `,
          style: e.label === null ? style : "label",
        },
        { text: target, style },
        { text: backs.has(edgeKey(e.from, e.to)) ? " ↺" : "", style },
      ));
    }
  });
  return lines;
}
