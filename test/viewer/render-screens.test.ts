/** The list and detail screens as lines (pure), at full width and on a 40-column terminal. */
import { describe, expect, it } from "vitest";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { graphFromSnapshot, plainLines } from "../../src/render/mod.ts";
import { parseDefinitionSnapshot } from "../../src/protocol/definition-snapshot.ts";
import { renderList } from "../../src/viewer/render-list.ts";
import { filterRuns } from "../../src/viewer/run-filter.ts";
import { applyKey, initialUi } from "../../src/viewer/ui-state.ts";
import type { Key } from "../../src/viewer/keys.ts";
import { relative } from "../../src/cli/time-text.ts";
import { renderDetail } from "../../src/viewer/render-detail.ts";
import { colorEnabled, toTerminal } from "../../src/viewer/ansi.ts";
import type { RunRow } from "../../src/state/viewer-queries.ts";
import type { AttemptRow } from "../../src/state/viewer-step-queries.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";

const NOW = 1_000_000;

function run(extra: Partial<RunRow> = {}): RunRow {
  return {
    runId: "run-1",
    workflowName: "review-loop",
    title: "Ship the parser",
    state: "running",
    queueState: "running",
    paused: false,
    blockedReason: null,
    executionMode: "headless",
    revision: 9,
    parentRunId: null,
    forkedFrom: null,
    definitionDigest: "sha256:x",
    createdAt: NOW - 125_000,
    updatedAt: NOW,
    finishedAt: null,
    steps: 3,
    openNode: "implement",
    openStartedAt: NOW - 20_000,
    error: null,
    spend: null,
    budget: {},
    ...extra,
  };
}

function attempt(sequence: number, nodeId: string, state = "ok", extra: Partial<AttemptRow> = {}) {
  return {
    attemptId: `a${sequence}`,
    sequence,
    nodeId,
    nodeKind: nodeId === "publish" ? "shell" : nodeId === "review" ? "humanDecision" : "agent",
    effect: "external",
    state,
    generation: 1,
    startedAt: NOW - 60_000 + sequence * 1000,
    finishedAt: state === "running" ? null : NOW - 60_000 + sequence * 1000 + 500,
    deadlineAt: null,
    error: null,
    outputBytes: 12,
    submissions: null,
    usage: null,
    adopted: false,
    ...extra,
  } satisfies AttemptRow;
}

const graph = graphFromSnapshot(
  parseDefinitionSnapshot(JSON.parse(JSON.stringify(compileWorkflow(reviewLoop).snapshot)))!,
);

describe("renderList", () => {
  const runs = [
    run(),
    run({
      runId: "run-2",
      workflowName: "hello",
      title: null,
      state: "completed",
      finishedAt: NOW - 100_000,
    }),
    run({ runId: "run-3", workflowName: "deploy", state: "waiting", paused: false }),
  ];
  const progress = new Map([["run-1", [{
    attemptId: "a3",
    key: "files",
    completed: 2,
    total: 6,
    label: null,
    count: 2,
    updatedAt: NOW,
  }]]]);

  it("says how to show all runs: a key live, the option in a printed snapshot", () => {
    const empty = { runs: [], progress, all: false, selected: 0, width: 100, rows: 10, now: NOW };
    expect(plainLines(renderList(empty).body).join("")).toContain("Press a");
    const printed = plainLines(renderList({ ...empty, snapshot: true }).body).join("");
    expect(printed).toBe("No active runs. 'pi-workflows view --all' shows all runs.");
  });

  it("shows state, run id, workflow, title, mode, age, elapsed and a progress ETA", () => {
    const { header, body } = renderList({
      runs,
      progress,
      all: true,
      selected: 0,
      width: 100,
      rows: 10,
      now: NOW,
    });
    const text = [...plainLines(header), ...plainLines(body)].join("\n");
    expect(text, text).toContain("pi-workflows runs · all (3)");
    expect(plainLines(body)[0], text).toMatch(
      /^▶◐ running {3}run-1 +review-loop +Ship the parser +headless +2m ago +2m05s {2}2\/6 ETA 40s$/,
    );
    expect(plainLines(body)[1], text).toMatch(/✓ completed run-2 +hello/);
    expect(plainLines(body)[2], text).toMatch(/⏸ waiting/);
  });

  it("lines the mode and time columns up under the header when some runs show progress", () => {
    const { header, body } = renderList({
      runs,
      progress,
      all: true,
      selected: 0,
      width: 100,
      rows: 10,
      now: NOW,
    });
    const head = plainLines(header).at(-1)!;
    const lines = plainLines(body);
    const text = [head, ...lines].join("\n");
    expect(lines.map((l) => l.indexOf("headless")), text).toEqual(
      lines.map(() => head.indexOf("mode")),
    );
    // Every row's elapsed time ends where the header's "elapsed" ends, with progress or without.
    const end = head.indexOf("elapsed") + "elapsed".length;
    for (const l of lines) expect(l.slice(end - 1, end + 1), text).toMatch(/^\S( |$)/);
    for (const l of [head, ...lines]) expect([...l].length, l).toBeLessThanOrEqual(100);
  });

  it("fits 40 columns by dropping the wide columns", () => {
    const { body } = renderList({
      runs,
      progress,
      all: true,
      selected: 1,
      width: 40,
      rows: 10,
      now: NOW,
    });
    for (const l of plainLines(body)) expect([...l].length, l).toBeLessThanOrEqual(40);
    expect(plainLines(body)[1]).toMatch(/^▶✓ run-2 +hello/);
  });

  it("shows the short run id people type, and ages as the CLI's list does", () => {
    const id = "run-1a2b3c4d-0000-4000-8000-000000000000";
    const view = { progress, all: true, selected: 0, width: 100, rows: 10, now: NOW };
    const shown = plainLines(renderList({ ...view, runs: [run({ runId: id })] }).body)[0];
    expect(shown).toMatch(/^▶◐ running {3}run-1a2b3c4d review-loop/);
    expect(shown).not.toContain(id);
    // One age formatter: the viewer's age column reads as `list` and status do.
    expect(shown).toContain(` ${relative(NOW - 125_000, NOW)} `);
    expect(relative(NOW - 125_000, NOW)).toBe("2m ago");
  });

  it("filters by id, workflow, title or state: typed after /, kept by enter, cleared by Esc", () => {
    const ctx = { steps: 0, pageRows: 10 };
    let ui = initialUi({ all: true });
    const type = (...keys: Key[]) => {
      for (const key of keys) {
        ui = applyKey(ui, key, { ...ctx, runIds: filterRuns(runs, ui.filter).map((r) => r.runId) });
      }
    };
    type("char:/", "char:d", "char:e", "char:p");
    expect(ui).toMatchObject({ filter: "dep", filtering: true, quit: false });
    expect(filterRuns(runs, ui.filter).map((r) => r.runId)).toEqual(["run-3"]);
    const list = renderList({
      runs: filterRuns(runs, ui.filter),
      filter: { text: ui.filter, editing: ui.filtering },
      progress,
      all: true,
      selected: 0,
      width: 100,
      rows: 10,
      now: NOW,
    });
    expect(plainLines(list.header)[0]).toBe("pi-workflows runs · all (1) · filter: dep_");
    type("enter", "down");
    expect(ui).toMatchObject({ filter: "dep", filtering: false, selected: 0 });
    type("enter");
    expect(ui).toMatchObject({ screen: "detail", runId: "run-3" });
    ui = { ...ui, screen: "list", runId: null };
    expect(filterRuns(runs, "COMPLETED").map((r) => r.runId)).toEqual(["run-2"]);
    expect(filterRuns(runs, "parser").map((r) => r.runId)).toEqual(["run-1", "run-3"]);
    type("escape");
    expect(ui).toMatchObject({ filter: "", quit: false });
    type("escape");
    expect(ui.quit).toBe(true);
    const none = renderList({
      runs: [],
      filter: { text: "zzz", editing: false },
      progress,
      all: false,
      selected: 0,
      width: 100,
      rows: 10,
      now: NOW,
    });
    expect(plainLines(none.body)).toEqual(['No active runs match "zzz". Esc clears the filter.']);
  });

  it("keeps the selection visible when the list is longer than the screen", () => {
    const many = Array.from(
      { length: 30 },
      (_, i) => run({ runId: `run-${i}`, workflowName: `wf-${i}` }),
    );
    const { body } = renderList({
      runs: many,
      progress: new Map(),
      all: false,
      selected: 25,
      width: 80,
      rows: 5,
      now: NOW,
    });
    expect(body.length).toBe(5);
    expect(plainLines(body).find((l) => l.startsWith("▶"))).toContain("wf-25");
  });
});

describe("renderDetail", () => {
  const attempts = [
    // The plan step's first submission was rejected; the second was accepted.
    attempt(1, "plan", "ok", {
      submissions: { submitted: 2, rejected: 1, lastRejection: "Output rejected: no steps" },
    }),
    attempt(2, "review"),
    attempt(3, "implement", "running", { outputBytes: 0 }),
  ];

  it("header, graph, timeline and inspector at a replay position", () => {
    const detail = {
      attemptId: "a2",
      output: { choice: "approve" },
      error: null,
      effects: [],
      interaction: null,
      decision: {
        kind: "humanDecision",
        state: "resolved",
        request: {
          title: "Review the plan",
          presentation: {
            summary: "Two files change",
            blocks: [{ kind: "bullets", items: ["parser.ts"] }],
          },
        },
        resolution: "answered",
        answer: { choice: "approve" },
      },
    };
    const screen = renderDetail({
      run: run(),
      attempts,
      graph,
      progress: undefined,
      output: undefined,
      position: 2,
      detail,
      width: 100,
      now: NOW,
    });
    const text = [...plainLines(screen.header), ...plainLines(screen.body)].join("\n");
    expect(text, text).toContain("review-loop — Ship the parser");
    expect(text, text).toContain("◐ running · replay 2/3 · step 2/3 · elapsed 2m05s · headless");
    expect(text, text).toMatch(/▶ {2}2 ✓ review \(◈ humanDecision, 500ms\)/);
    expect(text, text).toMatch(/1 ✓ plan .*1 of 2 submissions rejected, 12 B output/);
    expect(text, text).toContain("step 2: review · humanDecision · ok");
    expect(text, text).toContain("human decision: resolved (answered)");
    expect(text, text).toContain("• parser.ts");
    expect(text, text).toContain('"choice": "approve"');
    // At step 2 the active card is review; implement has not started in the replay.
    const lines = plainLines(screen.body);
    expect(screen.focusRow, text).toBeGreaterThanOrEqual(0);
    expect(lines[screen.focusRow + 1], text).toContain("review");
    expect(text, text).toMatch(/implement[\s\S]*· pending/);
  });

  it("shows each model step's usage, the inspected one's kinds, and the run's spend of its budget", () => {
    const priced = {
      input: 1000,
      output: 300,
      cacheRead: 1400,
      cacheWrite: 100,
      cost: 0.008295,
      provider: "fake",
      model: "fake-model",
    };
    const unpriced = { ...priced, cost: null, model: "free-model" };
    const screen = renderDetail({
      run: run({
        state: "running",
        queueState: "parked",
        blockedReason: "budgetExceeded",
        spend: { tokens: 5600, cost: 0.008295 },
        budget: { maxCostUsd: 0.005 },
      }),
      attempts: [
        attempt(1, "plan", "ok", { usage: priced, adopted: true }),
        attempt(2, "implement", "ok", { usage: unpriced }),
      ],
      graph,
      progress: undefined,
      output: undefined,
      position: 1,
      detail: undefined,
      width: 120,
      now: NOW,
    });
    const text = [...plainLines(screen.header), ...plainLines(screen.body)].join("\n");
    expect(text, text).toContain("spend 5.6k tokens, $0.008295 of budget $0.005");
    // A fork's step taken over from its parent says so first (its usage is the parent's).
    expect(text, text).toMatch(
      /1 ✓ plan .*adopted from the parent run · 2\.8k tokens, \$0\.008295 · 12 B output/,
    );
    // No price: tokens only, never a made-up cost.
    expect(text, text).toMatch(/2 ✓ implement .*2\.8k tokens · 12 B output/);
    expect(text, text).toContain(
      "used 2.8k tokens, $0.008295 (in 1000, out 300, cache read 1400, write 100), fake/fake-model",
    );
  });

  it("shows the shell receipt and the error of a failed step, live, in 40 columns", () => {
    const failed = [
      ...attempts.slice(0, 2),
      attempt(3, "publish", "failed", { error: { code: "commandFailed", message: "exit 2" } }),
    ];
    const screen = renderDetail({
      run: run({
        state: "failed",
        error: { code: "nodeFailed", message: "publish failed" },
        finishedAt: NOW,
      }),
      attempts: failed,
      graph,
      progress: undefined,
      output: undefined,
      position: null,
      detail: {
        attemptId: "a3",
        output: { command: "git", args: ["push"], exitCode: 2, signal: null },
        error: { code: "commandFailed", message: "exit 2" },
        effects: [{
          effectType: "shell",
          state: "rejected",
          errorCode: "commandFailed",
          receipt: undefined,
        }],
        interaction: null,
        decision: null,
      },
      width: 40,
      now: NOW,
    });
    const lines = [...plainLines(screen.header), ...plainLines(screen.body)];
    const text = lines.join("\n");
    for (const l of lines) expect([...l].length, text).toBeLessThanOrEqual(40);
    expect(text, text).toContain("$ git push → exit 2");
    expect(text, text).toContain("effect shell: rejected");
    expect(text, text).toContain("nodeFailed: publish failed");
    expect(text, text).toContain("· live");
  });
});

describe("terminal styles", () => {
  it("NO_COLOR and non-terminals get plain text; colour terminals get SGR codes", () => {
    const styled = [{ text: "ok", style: "ok" as const }, { text: " done", style: "" as const }];
    expect(toTerminal(styled, 80, false)).toBe("ok done");
    expect(toTerminal(styled, 80, true)).toBe("\x1b[32mok\x1b[0m done");
    expect(toTerminal(styled, 4, false)).toBe("ok d");
    expect(colorEnabled({ NO_COLOR: "1" }, true)).toBe(false);
    expect(colorEnabled({}, false)).toBe(false);
    expect(colorEnabled({}, true)).toBe(true);
  });

  it("shows a workflow's control characters as escapes, cut by what is shown", () => {
    const title = [{ text: "T\x1b[2J\rx\u202e", style: "title" as const }];
    expect(toTerminal(title, 80, true)).toBe("\x1b[1mT\\u001b[2J\\u000dx\\u202e\x1b[0m");
    expect(toTerminal(title, 8, false)).toBe("T\\u001b[");
  });
});
