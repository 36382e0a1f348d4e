/**
 * Workflows the interactive tests run, written into a temp project (loaded like any project
 * workflow), and small readers of the state database.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants, type Violation } from "../../src/state/invariants.ts";
import { runRevisionSql } from "../../src/state/journal.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { queryAll } from "../../src/state/statements.ts";

/**
 * `ask` (agent, validate wants {n: number}; `{slow: true}` blocks validation until the file
 * `input.gate` exists, `{block: true}` blocks the child's event loop until then (after writing
 * `<gate>.blocked`), `{hang: true}`
 * blocks forever) routes on `$result.outcome`: ok -> `done`,
 * failed | timed_out -> `recover`. `input.timeoutMs` sets its deadline.
 */
export const ROUTED = `
import { existsSync, writeFileSync } from "node:fs";
import { agent, compute, defineWorkflow } from "pi-workflows";
const wait = (ms) => new Promise((r) => setTimeout(r, ms));
export default defineWorkflow({
  name: "routed",
  startAt: "ask",
  nodes: {
    ask: agent({
      prompt: ({ input }) => "Give a number for " + (input.topic ?? "this"),
      expectedOutput: '{ "n": 1 }',
      timeoutMs: ({ input }) => input.timeoutMs ?? 120000,
      validate: async (output, { input }) => {
        if (output?.hang) await new Promise(() => {});
        if (output?.slow) while (!existsSync(input.gate)) await wait(20);
        // Synchronously stuck: the event loop never runs, so a closed channel goes unnoticed.
        const pause = new Int32Array(new SharedArrayBuffer(4));
        if (output?.block) {
          writeFileSync(input.gate + ".blocked", "");
          while (!existsSync(input.gate)) Atomics.wait(pause, 0, 0, 50);
        }
        if (typeof output?.n !== "number") throw new Error('send {"n": <number>}');
        return { n: output.n };
      },
    }),
    done: compute({ run: ({ outputs }) => ({ got: outputs.ask }) }),
    recover: compute({
      run: ({ results }) => ({ outcome: results.ask.outcome, code: results.ask.error?.code }),
    }),
  },
  edges: [
    { from: "ask", switch: { on: "$result.outcome", cases: { ok: "done", failed: "recover", timed_out: "recover" } } },
  ],
});
`;

/** One agent step with a deadline of `input.timeoutMs` and no recovery edge. */
export const LONE = `
import { agent, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "lone",
  startAt: "ask",
  nodes: { ask: agent({ prompt: "Say anything", timeoutMs: ({ input }) => input.timeoutMs ?? 120000 }) },
  edges: [],
});
`;

/** A decision, then an assistant message, then done. */
export const TALK = `
import { assistantMessage, compute, decision, decisionEdge, defineWorkflow } from "pi-workflows";
const choices = ["yes", "no"];
export default defineWorkflow({
  name: "talk",
  startAt: "pick",
  nodes: {
    pick: decision({ question: "Ship it?", choices }),
    say: assistantMessage({ prompt: ({ outputs }) => "Tell the user: " + outputs.pick.route }),
    stop: compute({ run: () => "stopped" }),
    done: compute({ run: ({ outputs }) => outputs.say }),
  },
  edges: [
    decisionEdge({ from: "pick", choices, cases: { yes: "say", no: "stop" } }),
    { from: "say", to: "done" },
  ],
});
`;

/**
 * Two compute steps of about 600 kB each, then an agent step whose `validate` reads both: the
 * run's facts (over 1 MiB) pass no single message, so the validation child streams them.
 */
export const HEAVY = `
import { agent, compute, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "heavy",
  startAt: "a",
  nodes: {
    a: compute({ run: () => "a".repeat(600000) }),
    b: compute({ run: () => "b".repeat(600000) }),
    ask: agent({
      prompt: "Give a number",
      validate: (output, { outputs }) => ({ n: output.n, seen: outputs.a.length + outputs.b.length }),
    }),
  },
  edges: [{ from: "a", to: "b" }, { from: "b", to: "ask" }],
});
`;

/**
 * Counts its module evaluations in the process (`globalThis`) and the callbacks run in each
 * module instance: `first` (agent; its validation rejects `{again: true}`), `second` (agent),
 * `done` returns what each saw. A generation or validation that reused an instance sees
 * `calls` above 1.
 */
export const COUNTED = `
import { agent, compute, defineWorkflow } from "pi-workflows";
let calls = 0;
const evaluation = globalThis.countedEvaluations = (globalThis.countedEvaluations ?? 0) + 1;
const seen = () => ({ calls: ++calls, evaluation, pid: process.pid });
const step = (name) => agent({
  prompt: () => name + " " + JSON.stringify(seen()),
  validate: (output) => {
    const now = seen();
    if (output?.again) throw new Error("again " + JSON.stringify(now));
    return now;
  },
});
export default defineWorkflow({
  name: "counted",
  startAt: "first",
  nodes: {
    first: step("first"),
    second: step("second"),
    done: compute({ run: ({ outputs }) => ({ first: outputs.first, second: outputs.second, done: seen() }) }),
  },
  edges: [{ from: "first", to: "second" }, { from: "second", to: "done" }],
});
`;

/** Writes the workflows into `<root>/project/.pi/workflows/` and returns the project dir. */
export function writeProject(root: string): string {
  const project = join(root, "project");
  const dir = join(project, ".pi", "workflows");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "routed.workflow.ts"), ROUTED);
  writeFileSync(join(dir, "lone.workflow.ts"), LONE);
  writeFileSync(join(dir, "talk.workflow.ts"), TALK);
  writeFileSync(join(dir, "heavy.workflow.ts"), HEAVY);
  writeFileSync(join(dir, "counted.workflow.ts"), COUNTED);
  return project;
}

/** Runs `fn` on a read-only store of `stateDir`. */
export function withStore<T>(stateDir: string, fn: (store: StateStore) => T): T {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds, readOnly: true });
  try {
    return fn(store);
  } finally {
    closeStateStore(store);
  }
}

export function runRow(stateDir: string, runId: string) {
  return withStore(
    stateDir,
    (store) =>
      queryAll<
        { state: string; output_json: string | null; error_code: string | null; revision: number }
      >(
        store,
        `SELECT state, output_json, error_code, ${runRevisionSql()} AS revision FROM runs r ` +
          "WHERE run_id = :runId",
        { runId },
      )[0],
  );
}

export function violations(stateDir: string): Violation[] {
  return withStore(stateDir, checkInvariants);
}

export function rows<T>(stateDir: string, sql: string, params: Record<string, string> = {}): T[] {
  return withStore(stateDir, (store) => queryAll<T>(store, sql, params));
}
