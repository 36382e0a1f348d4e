/**
 * The wiring rules of a compiled graph: every start node and edge target names a node or an
 * include, every edge source a node or `mount.exit`, at most one out-edge per node, an included
 * workflow ends only through its exits, and every node is reachable from the start. They collect
 * every problem they find, each one actionable sentence (with the closest name when one is a
 * typo away), and `failAll` reports them in one error, so an author fixes a graph in one pass.
 */
import type { CompiledEdge, CompiledNode, CompiledScope } from "./compiled-graph.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import { closestName } from "./sources/closest-name.ts";

/** Throws the `invalidGraph` (or `code`) error of workflow `name`. */
export function fail(name: string, detail: string, code = "invalidGraph"): never {
  throw new WorkflowDefinitionError(code, `Invalid workflow graph "${name}": ${detail}`);
}

/** The wiring problems found so far, each one actionable sentence. */
export type Problems = string[];

/** At most this many problems are spelled out; the rest are counted. */
const MAX_PROBLEMS_SHOWN = 8;

/** One error for every wiring problem found (the message of a single one is unchanged). */
export function failAll(name: string, problems: Problems): never {
  if (problems.length === 1) fail(name, problems[0]);
  const shown = problems.slice(0, MAX_PROBLEMS_SHOWN);
  const more = problems.length - shown.length;
  fail(
    name,
    `${problems.length} problems: ${shown.map((p, i) => `(${i + 1}) ${p}`).join("; ")}` +
      (more > 0 ? `; and ${more} more` : ""),
  );
}

/** A problem inside an included workflow names it and its mount. */
function problemIn(scope: CompiledScope, detail: string): string {
  if (!scope.parent) return detail;
  return `in "${scope.definition.name}" (mount "${scope.prefix.slice(0, -1)}"): ${detail}`;
}

/** ` (did you mean "x"?)` when a known node or mount is one typo away. */
function didYouMean(scope: CompiledScope, typed: string): string {
  const near = closestName(typed, [
    ...Object.keys(scope.definition.nodes),
    ...scope.children.keys(),
  ]);
  return near ? `; did you mean "${near}"?` : "";
}

/**
 * The flattened node a target name enters: a node, or the start of a mounted include; null
 * (and a problem) when it names neither. `from` is the edge's source, null for a start node.
 */
export function entryOf(
  scope: CompiledScope,
  target: string,
  problems: Problems,
  from: string | null,
): string | null {
  if (target in scope.definition.nodes) return scope.prefix + target;
  const child = scope.children.get(target);
  if (child) {
    // A child's missing start node is reported when the child is wired.
    return child.definition.startAt in child.definition.nodes ||
        child.children.has(child.definition.startAt)
      ? entryOf(child, child.definition.startAt, problems, null)
      : null;
  }
  const detail = from === null
    ? `start node "${target}" does not exist`
    : `edge from "${from}" goes to unknown target "${target}"`;
  problems.push(problemIn(scope, detail + didYouMean(scope, target)));
  return null;
}

/** The flattened node an edge source names: a node, or `mount.exit`; null and a problem if not. */
function sourceOf(scope: CompiledScope, from: string, problems: Problems): string | null {
  if (from in scope.definition.nodes) return scope.prefix + from;
  const dot = from.indexOf(".");
  const problem = (detail: string) => {
    problems.push(problemIn(scope, detail));
    return null;
  };
  if (dot < 0) {
    if (scope.children.has(from)) {
      return problem(`edges leave include "${from}" through "${from}.<exit>", not "${from}"`);
    }
    return problem(`edge from unknown node "${from}"${didYouMean(scope, from)}`);
  }
  const mount = from.slice(0, dot);
  const child = scope.children.get(mount);
  if (!child) return problem(`edge from unknown include "${mount}"${didYouMean(scope, mount)}`);
  const exit = child.exits.get(from.slice(dot + 1));
  if (!exit) {
    const known = [...child.exits.keys()].map((e) => `"${e}"`).join(", ");
    return problem(
      `include "${mount}" has no exit "${from.slice(dot + 1)}" (its exits: ${known || "none"})`,
    );
  }
  return exit;
}

export function wireScope(
  scope: CompiledScope,
  nodes: Map<string, CompiledNode>,
  edges: Map<string, CompiledEdge>,
  problems: Problems,
): void {
  const def = scope.definition;
  if (scope.parent && !(def.startAt in def.nodes) && !scope.children.has(def.startAt)) {
    entryOf(scope, def.startAt, problems, null); // The root's start is checked by the caller.
  }
  // Children first: a parent's `mount.exit` edge needs the child's exit map.
  for (const child of scope.children.values()) wireScope(child, nodes, edges, problems);
  if (scope.parent) {
    for (const [exitName, exit] of Object.entries(def.exits ?? {})) {
      const from = sourceOf(scope, exit.from, problems);
      if (from === null) continue;
      const node = nodes.get(from)!;
      if (node.scope === scope) node.exitName = exitName;
      scope.exits.set(exitName, from);
    }
  }
  // Sources with an edge, even one whose target was a problem (it is not a terminal node).
  const outgoing = new Set<string>();
  for (const edge of def.edges ?? []) {
    const from = sourceOf(scope, edge.from, problems);
    if (from === null) continue;
    if (outgoing.has(from)) {
      problems.push(
        problemIn(
          scope,
          `node "${edge.from}" has more than one outgoing edge (route with one switch edge)`,
        ),
      );
      continue;
    }
    outgoing.add(from);
    if ("to" in edge) {
      const to = entryOf(scope, edge.to, problems, edge.from);
      if (to !== null) edges.set(from, { kind: "plain", to });
    } else {
      const cases: Record<string, string> = {};
      for (const [value, target] of Object.entries(edge.switch.cases)) {
        const to = entryOf(scope, target, problems, edge.from);
        if (to !== null) cases[value] = to;
      }
      edges.set(from, { kind: "switch", on: edge.switch.on, cases });
    }
  }
  if (scope.parent) {
    const exitNodes = new Set(scope.exits.values());
    for (const exitNode of exitNodes) {
      if (edges.has(exitNode) || outgoing.has(exitNode)) {
        problems.push(
          problemIn(scope, `exit node "${exitNode.slice(scope.prefix.length)}" must be terminal`),
        );
      }
    }
    for (const localId of Object.keys(def.nodes)) {
      const id = scope.prefix + localId;
      if (!outgoing.has(id) && !exitNodes.has(id)) {
        problems.push(problemIn(
          scope,
          `terminal node "${localId}" is not an exit; an included workflow ends only through exits`,
        ));
      }
    }
  }
}

export function checkReachable(
  startAt: string,
  nodes: Map<string, CompiledNode>,
  edges: Map<string, CompiledEdge>,
  problems: Problems,
): void {
  const seen = new Set([startAt]);
  const queue = [startAt];
  while (queue.length > 0) {
    const edge = edges.get(queue.shift()!);
    if (!edge) continue;
    const targets = edge.kind === "plain" ? [edge.to] : Object.values(edge.cases);
    for (const t of targets) {
      if (!seen.has(t)) {
        seen.add(t);
        queue.push(t);
      }
    }
  }
  const unreachable = [...nodes.keys()].filter((id) => !seen.has(id));
  if (unreachable.length > 0) {
    problems.push(
      `unreachable node${unreachable.length > 1 ? "s" : ""} ${unreachable.join(", ")} ` +
        "(no edge from the start node leads there)",
    );
  }
}
