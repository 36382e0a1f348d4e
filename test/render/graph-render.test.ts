/**
 * The graph renderer against real workflow shapes (the examples, compiled by the real loader,
 * plus a review loop with a human decision), at several replay positions. Every failure prints
 * the drawing it judged.
 */
import { join } from "node:path";
import process from "node:process";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../src/protocol/canonical-json.ts";
import { parseDefinitionSnapshot } from "../../src/protocol/definition-snapshot.ts";
import { graphFromSnapshot, type WorkflowGraph } from "../../src/render/graph-model.ts";
import { renderGraph } from "../../src/render/graph-render.ts";
import { type ReplayAttempt, sceneAt } from "../../src/render/replay.ts";
import { plainLines } from "../../src/render/styled-line.ts";
import { loadWorkflow } from "../../src/workflows/index.ts";
import { drawingProblems } from "./drawing-check.ts";
import { reviewLoop } from "./fixtures/review-loop.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";

const examples = join(process.cwd(), "examples");

/** The snapshot exactly as a viewer reads it back from the database (canonical JSON). */
function stored(snapshot: Record<string, unknown>): WorkflowGraph {
  const parsed = parseDefinitionSnapshot(JSON.parse(canonicalJson(snapshot as never)));
  if (!parsed) throw new Error("snapshot did not parse");
  return graphFromSnapshot(parsed);
}

async function example(file: string): Promise<WorkflowGraph> {
  const { workflow } = await loadWorkflow(join(examples, file), { cwd: examples });
  return stored(workflow.snapshot);
}

function attempt(nodeId: string, state = "ok", at = 0): ReplayAttempt {
  return {
    nodeId,
    state,
    startedAt: at,
    finishedAt: state === "running" || state === "waiting" ? null : at + 1500,
    deadlineAt: null,
  };
}

function draw(
  graph: WorkflowGraph,
  attempts: ReplayAttempt[],
  position: number | null,
  width = 100,
) {
  return plainLines(renderGraph(graph, sceneAt(attempts, position, 60_000, { graph }), { width }));
}

function expectSound(lines: string[], width: number): void {
  const drawing = `\n${lines.join("\n")}\n`;
  expect(drawingProblems(lines), drawing).toEqual([]);
  for (const l of lines) expect([...l].length, drawing).toBeLessThanOrEqual(width);
}

/**
 * The rows of the card whose title is `title`, found by its title line, down to its bottom
 * border (the status is the row above it: `.at(-2)`).
 */
function cardOf(lines: string[], title: string): string[] {
  const y = lines.findIndex((l) => new RegExp(`[│┃]\\s+${title}\\s+[│┃]`).test(l));
  if (y < 0) throw new Error(`no card "${title}" in\n${lines.join("\n")}`);
  const x = lines[y].search(new RegExp(`[│┃]\\s+${title}`));
  let end = x + 1;
  while (end < lines[y].length && !"│┃".includes(lines[y][end])) end++;
  let bottom = y + 1;
  while (bottom < lines.length && !"└┗".includes([...lines[bottom]][x] ?? "")) bottom++;
  return lines.slice(y - 1, bottom + 1).map((l) => [...l].slice(x, end + 1).join(""));
}

describe("renderGraph (box style)", () => {
  it("hello: a straight chain, all pending before the first step", async () => {
    const graph = await example("hello.workflow.ts");
    const lines = draw(graph, [], null);
    expectSound(lines, 100);
    expect(lines.join("\n")).toMatchInlineSnapshot(`
      " ┌──────────────────────┐
       │        greet         │
       ├──────────────────────┤
       │ ƒ compute            │
       │ compose the greeting │
       │ · pending            │
       └───────────┬──────────┘
                   │
                   ▼
      ┌────────────────────────┐
      │          echo          │
      ├────────────────────────┤
      │ $ shell                │
      │ echo through a real p… │
      │ · pending              │
      └────────────┬───────────┘
                   │
                   ▼
         ┌───────────────────┐
         │      finish       │
         ├───────────────────┤
         │ ƒ compute         │
         │                   │
         │ · pending         │
         └───────────────────┘"
    `);
  });

  it("hello: replay positions move the heavy active card and the taken path", async () => {
    const graph = await example("hello.workflow.ts");
    const run = [attempt("greet"), attempt("echo"), attempt("finish", "running")];
    for (const [position, active] of [[1, "greet"], [2, "echo"], [null, "finish"]] as const) {
      const lines = draw(graph, run, position);
      expectSound(lines, 100);
      const card = cardOf(lines, active);
      expect(card[0], lines.join("\n")).toMatch(/^┏━+┓$/);
      for (const other of ["greet", "echo", "finish"].filter((n) => n !== active)) {
        expect(cardOf(lines, other)[0], lines.join("\n")).toMatch(/^┌─+┐$/);
      }
    }
    const first = draw(graph, run, 1);
    expect(cardOf(first, "echo").at(-2), first.join("\n")).toContain("· pending");
    const live = draw(graph, run, null);
    expect(cardOf(live, "finish").at(-2), live.join("\n")).toContain("◐ running ◷ 1m00s");

    // The timer is never cut: with attempts and a deadline the state word gives way first, then
    // (in a 17-column card) the deadline; the inspector still names it.
    const again = [
      ...run.slice(0, 2),
      attempt("finish", "failed"),
      { ...attempt("finish", "running", 0), deadlineAt: 15 * 60_000 },
    ];
    const timed = draw(graph, again, null);
    const status = cardOf(timed, "finish").at(-2)!;
    expect(status, timed.join("\n")).toMatch(/┃ ◐ ↻ 2 ◷ 1m00s +┃/);
    expect(status).not.toContain("…");
  });

  it("shows each node's statusDetail on its card; an ended run's untaken nodes are skipped", async () => {
    const graph = await example("branch.workflow.ts");
    const run = [attempt("check"), attempt("classify"), attempt("odd")];
    const ended = plainLines(
      renderGraph(graph, sceneAt(run, null, 60_000, { graph, ended: true }), { width: 100 }),
    );
    expectSound(ended, 100);
    expect(cardOf(ended, "even").at(-2), ended.join("\n")).toContain("– skipped");
    // Before the run ended, the newest step's successor is not known: still pending.
    const open = draw(graph, [attempt("check"), attempt("classify")], null);
    expect(cardOf(open, "even").at(-2), open.join("\n")).toContain("· pending");
    const hello = await example("hello.workflow.ts");
    const lines = draw(hello, [], null);
    expect(cardOf(lines, "greet")[4], lines.join("\n")).toMatch(/│ compose the greeting +│/);
  });

  it("branch: switch cases label the edges into both arms", async () => {
    const graph = await example("branch.workflow.ts");
    const lines = draw(graph, [attempt("check"), attempt("classify"), attempt("even")], null);
    expectSound(lines, 100);
    const text = lines.join("\n");
    expect(text).toContain(" even");
    expect(text).toContain(" odd");
    // The run went the even way: the odd arm is skipped, not pending.
    expect(cardOf(lines, "odd").at(-2), text).toContain("– skipped");
    expect(cardOf(lines, "even").at(-2), text).toContain("✓ ok");
  });

  it("loop: the back edge goes up the right gutter with its case label; attempts count", async () => {
    const graph = await example("loop.workflow.ts");
    const run = [attempt("tick"), attempt("tick"), attempt("tick"), attempt("finish")];
    for (const position of [1, 3, null]) {
      const lines = draw(graph, run, position);
      expectSound(lines, 100);
      const text = lines.join("\n");
      expect(text).toContain("false");
      expect(lines.some((l) => /┘\s*$|┐\s*$/.test(l)), text).toBe(true);
    }
    const at3 = draw(graph, run, 3);
    expect(cardOf(at3, "tick").at(-2), at3.join("\n")).toContain("↻ 3");
    expect(cardOf(at3, "finish").at(-2), at3.join("\n")).toContain("· pending");
  });

  it("include: mounted nodes show as mount › node and exits route on", async () => {
    const graph = await example("include.workflow.ts");
    const lines = draw(graph, [attempt("prepare"), attempt("review/inspect", "running")], null);
    expectSound(lines, 100);
    const text = lines.join("\n");
    expect(text).toContain("review › inspect");
    expect(text).toContain("publish");
    expect(text).toContain("shelve");
  });

  it("human decision: a waiting decision is the active card", async () => {
    const graph = await example("human-decision.workflow.ts");
    const lines = draw(graph, [attempt("prepare"), attempt("approval", "waiting")], null);
    expectSound(lines, 100);
    const card = cardOf(lines, "approval");
    expect(card[0], lines.join("\n")).toMatch(/^┏/);
    expect(card.at(-2), lines.join("\n")).toContain("⏸ waiting");
  });

  it("review loop: branches, a loop and a long edge stay sound at every position", () => {
    const graph = stored(compileWorkflow(reviewLoop).snapshot);
    const run = [
      attempt("plan"),
      attempt("review"),
      attempt("plan"),
      attempt("review"),
      attempt("implement"),
      attempt("publish", "failed"),
    ];
    for (let position = 1; position <= run.length; position++) {
      for (const width of [100, 60, 44]) {
        const lines = draw(graph, run, position, width);
        expectSound(lines, width);
      }
    }
    const lines = draw(graph, run, null);
    const text = lines.join("\n");
    for (const label of ["approve", "revise", "reject"]) expect(text).toContain(label);
    expect(cardOf(lines, "plan").at(-2), text).toContain("↻ 2");
    expect(cardOf(lines, "publish").at(-2), text).toContain("✗ failed");
  });
});

describe("renderGraph (line style and narrow screens)", () => {
  it("falls back to one line per node when cards cannot fit", () => {
    const graph = stored(compileWorkflow(reviewLoop).snapshot);
    const run = [attempt("plan"), attempt("review", "waiting")];
    const lines = draw(graph, run, null, 20);
    const text = lines.join("\n");
    for (const l of lines) expect([...l].length, text).toBeLessThanOrEqual(40);
    expect(lines[0], text).toMatch(/^ {2}✓ ● plan/);
    expect(text).toContain("▶ ⏸ ◈ review");
    expect(text).toContain("revise → plan ↺");
  });

  it("fits a 40-column screen with boxes when the layers are narrow", async () => {
    const graph = await example("loop.workflow.ts");
    const lines = draw(graph, [attempt("tick")], null, 40);
    expectSound(lines, 40);
    expect(lines.join("\n")).toContain("┌");
  });

  it("an empty graph draws nothing", () => {
    expect(renderGraph({ startAt: "a", nodes: [], edges: [] }, sceneAt([], null, 0), {
      width: 80,
    })).toEqual([]);
  });
});
