/**
 * The pure graph renderer shared by the terminal viewer and the Pi widget: a definition
 * snapshot becomes a `WorkflowGraph`, a list of attempts and a replay position become a
 * `GraphScene`, and `renderGraph` draws both into styled lines. No I/O, no clock, no imports
 * outside `src/protocol` types.
 */
export {
  type GraphEdge,
  graphFromSnapshot,
  type GraphNode,
  type WorkflowGraph,
} from "./graph-model.ts";
export {
  type GraphStyle,
  renderGraph,
  type RenderGraphOptions,
  stateStyle,
} from "./graph-render.ts";
export { type GraphLayout, layoutGraph } from "./layout.ts";
export {
  edgeKey,
  type GraphScene,
  type NodeStatus,
  type ReplayAttempt,
  sceneAt,
  timerOf,
} from "./replay.ts";
export {
  formatAge,
  formatDuration,
  kindGlyph,
  type NodeState,
  stateGlyph,
  stateWord,
} from "./format.ts";
export {
  clipLine,
  concat,
  line,
  plainLines,
  plainText,
  type Segment,
  type Style,
  type StyledLine,
  textWidth,
  truncate,
} from "./styled-line.ts";
