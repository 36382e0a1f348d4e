import { describe, expect, it } from "vitest";
import { checkpoint, compute, defineWorkflow, includeWorkflow, shell } from "../../mod.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { compileWorkflow } from "../../src/workflows/index.ts";

const c = () => compute({ run: () => 1 });

function graphError(spec: Parameters<typeof defineWorkflow>[0]): string {
  try {
    compileWorkflow(defineWorkflow(spec));
  } catch (error) {
    return `${(error as { code: string }).code}: ${(error as Error).message}`;
  }
  return "no error";
}

const child = defineWorkflow({
  name: "child",
  startAt: "x",
  nodes: { x: c(), y: c() },
  edges: [{ from: "x", to: "y" }],
  exits: { done: { from: "y" } },
});

describe("compileWorkflow() graph rules", () => {
  it("requires an existing start node", () => {
    expect(graphError({ name: "w", startAt: "nope", nodes: { a: c() } })).toBe(
      'invalidGraph: Invalid workflow graph "w": start node "nope" does not exist',
    );
  });

  it("rejects unknown edge targets and sources", () => {
    expect(
      graphError({ name: "w", startAt: "a", nodes: { a: c() }, edges: [{ from: "a", to: "b" }] }),
    )
      .toMatch(/unknown target "b"/);
    expect(
      graphError({ name: "w", startAt: "a", nodes: { a: c() }, edges: [{ from: "z", to: "a" }] }),
    )
      .toMatch(/edge from unknown node "z"/);
    expect(graphError({
      name: "w",
      startAt: "a",
      nodes: { a: c(), b: c() },
      edges: [{ from: "a", switch: { on: "$.k", cases: { x: "b", y: "q" } } }],
    })).toMatch(/unknown target "q"/);
  });

  it("allows at most one outgoing edge per node", () => {
    expect(graphError({
      name: "w",
      startAt: "a",
      nodes: { a: c(), b: c() },
      edges: [{ from: "a", to: "b" }, { from: "a", to: "b" }],
    })).toMatch(/node "a" has more than one outgoing edge/);
  });

  it("rejects unreachable nodes", () => {
    expect(graphError({ name: "w", startAt: "a", nodes: { a: c(), b: c(), d: c() } })).toMatch(
      /unreachable nodes b, d/,
    );
  });

  it("reports every wiring problem at once, each with what to change", () => {
    const strayTerminal = defineWorkflow({
      name: "stray",
      startAt: "x",
      nodes: { x: c(), y: c() },
      edges: [{ from: "x", to: "y" }],
      exits: { done: { from: "x" } },
    });
    expect(graphError({
      name: "w",
      startAt: "a",
      nodes: { a: c(), b: c(), review: c(), lost: c() },
      includes: { s: includeWorkflow(strayTerminal) },
      edges: [
        { from: "a", to: "reviw" },
        { from: "a", to: "b" },
        { from: "b", switch: { on: "$.k", cases: { x: "s", y: "nowhere" } } },
        { from: "s.end", to: "a" },
      ],
    })).toBe(
      'invalidGraph: Invalid workflow graph "w": 7 problems: ' +
        '(1) in "stray" (mount "s"): exit node "x" must be terminal; ' +
        '(2) in "stray" (mount "s"): terminal node "y" is not an exit; an included workflow ' +
        "ends only through exits; " +
        '(3) edge from "a" goes to unknown target "reviw"; did you mean "review"?; ' +
        '(4) node "a" has more than one outgoing edge (route with one switch edge); ' +
        '(5) edge from "b" goes to unknown target "nowhere"; ' +
        '(6) include "s" has no exit "end" (its exits: "done"); ' +
        "(7) unreachable nodes b, review, lost, s/x, s/y (no edge from the start node leads there)",
    );
  });

  it("flattens includes into mount/child ids with entry and exit edges", () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "parent",
      startAt: "a",
      nodes: { a: c(), b: c() },
      includes: { sub: includeWorkflow(child) },
      edges: [{ from: "a", to: "sub" }, { from: "sub.done", to: "b" }],
    }));
    expect([...wf.nodes.keys()]).toEqual(["a", "b", "sub/x", "sub/y"]);
    expect(wf.edges.get("a")).toEqual({ kind: "plain", to: "sub/x" });
    expect(wf.edges.get("sub/y")).toEqual({ kind: "plain", to: "b" });
    expect(wf.nodes.get("sub/y")?.exitName).toBe("done");
  });

  it("starts inside an include when startAt names a mount", () => {
    const wf = compileWorkflow(defineWorkflow({
      name: "p",
      startAt: "sub",
      nodes: { b: c() },
      includes: { sub: includeWorkflow(child) },
      edges: [{ from: "sub.done", to: "b" }],
    }));
    expect(wf.startAt).toBe("sub/x");
  });

  it("checks include wiring: exits, terminal nodes, bare mount sources", () => {
    const base = { name: "p", startAt: "a", nodes: { a: c() } };
    const noExits = defineWorkflow({ name: "n", startAt: "x", nodes: { x: c() } });
    expect(
      graphError({
        ...base,
        includes: { s: includeWorkflow(noExits) },
        edges: [{ from: "a", to: "s" }],
      }),
    )
      .toMatch(/included workflow "n" \(mount "s"\) declares no exits/);
    expect(graphError({
      ...base,
      includes: { s: includeWorkflow(child) },
      edges: [{ from: "a", to: "s" }, { from: "s", to: "a" }],
    })).toMatch(/edges leave include "s" through "s.<exit>"/);
    expect(graphError({
      ...base,
      includes: { s: includeWorkflow(child) },
      edges: [{ from: "a", to: "s" }, { from: "s.nope", to: "a" }],
    })).toMatch(/include "s" has no exit "nope"/);
    const looseEnd = defineWorkflow({
      name: "loose",
      startAt: "x",
      nodes: { x: c(), y: c() },
      edges: [{ from: "x", switch: { on: "$.k", cases: { a: "y" } } }],
      exits: { done: { from: "x" } },
    });
    expect(
      graphError({
        ...base,
        includes: { s: includeWorkflow(looseEnd) },
        edges: [{ from: "a", to: "s" }],
      }),
    )
      .toMatch(/exit node "x" must be terminal/);
    const strayTerminal = defineWorkflow({
      name: "stray",
      startAt: "x",
      nodes: { x: c(), y: c(), z: c() },
      edges: [{ from: "x", switch: { on: "$.k", cases: { a: "y", b: "z" } } }],
      exits: { done: { from: "z" } },
    });
    expect(
      graphError({
        ...base,
        includes: { s: includeWorkflow(strayTerminal) },
        edges: [{ from: "a", to: "s" }],
      }),
    )
      .toMatch(/terminal node "y" is not an exit/);
  });

  it("rejects include cycles and string includes without a loader", () => {
    const spec = { name: "self", startAt: "a", nodes: { a: c() }, exits: { e: { from: "a" } } };
    const includes: Record<string, ReturnType<typeof includeWorkflow>> = {};
    const self = defineWorkflow({ ...spec, includes, edges: [{ from: "a", to: "m" }] } as never);
    // The includes object is the frozen definition's own (shallow freeze), so a cycle can be built.
    includes.m = includeWorkflow(self);
    expect(graphError(self as never)).toMatch(/^sourceCycle: .*include cycle: self -> self/);
    expect(graphError({
      name: "w",
      startAt: "a",
      nodes: { a: c() },
      includes: { m: includeWorkflow("./other.workflow.ts") },
      edges: [{ from: "a", to: "m" }],
    })).toMatch(/only the loader can resolve/);
  });

  it("records effects and a digest that ignores callback bodies but not structure", () => {
    const make = (detail: string, body: () => number) =>
      compileWorkflow(defineWorkflow({
        name: "d",
        startAt: "a",
        nodes: {
          a: compute({ run: body, statusDetail: detail }),
          s: shell({ exec: () => ({ command: "true" }) }),
          k: checkpoint(),
        },
        edges: [{ from: "a", to: "s" }, { from: "s", to: "k" }],
      }));
    const one = make("x", () => 1);
    expect(one.nodes.get("a")?.effect).toBe("pure");
    expect(one.nodes.get("s")?.effect).toBe("external");
    expect(one.nodes.get("k")?.effect).toBe("pure");
    expect(fingerprint(make("x", () => 2).snapshot)).toBe(fingerprint(one.snapshot));
    expect(fingerprint(make("y", () => 1).snapshot)).not.toBe(fingerprint(one.snapshot));
    expect(() => fingerprint(one.snapshot)).not.toThrow();
    expect(one.maxSteps).toBe(100);
  });

  it("rejects something that is not a definition", () => {
    expect(() => compileWorkflow({ name: "x" } as never)).toThrow(
      /expected the result of defineWorkflow/,
    );
  });
});
