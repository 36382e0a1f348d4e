/**
 * The workflows the crash trial (crash-trial.ts) starts, and what each must have done by its end.
 * Every side effect appends one line naming its run's tag to the run's side file, so a double
 * execution is countable; the trial plays the operator for an ambiguous effect by reading that
 * file (the line is there: `--applied`; it is not: `--not-applied`).
 */
import { join } from "node:path";
import { ROOT } from "../support/host.ts";

/**
 * compute -> action (plain, external) -> action (managed effect with a read-back) -> shell
 * (managed, read-back) -> checkpoint -> notify -> shell (plain, external) -> compute. The delays
 * (input `d`, ms) put the kills inside the effects as often as between them.
 */
export const LEDGER_SOURCE = `
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { action, checkpoint, compute, defineWorkflow, notify, shell } from "@osolmaz/pi-workflows";
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const has = (file, line) => existsSync(file) && readFileSync(file, "utf8").split("\\n").includes(line);
export default defineWorkflow({
  name: "ledger",
  input: (raw) => raw,
  startAt: "plan",
  nodes: {
    plan: compute({ run: ({ input }) => ({ tag: input.tag }) }),
    pay: action({
      run: async ({ input }) => {
        await wait(input.d[0]);
        appendFileSync(input.side, "pay " + input.tag + "\\n");
        await wait(input.d[1]);
        return { paid: input.tag };
      },
    }),
    ship: action({
      effect: {
        type: "ship",
        key: ({ input }) => "ship-" + input.tag,
        observe: ({ input }) => has(input.side, "ship " + input.tag) ? { shipped: input.tag } : null,
      },
      run: async ({ input }) => {
        await wait(input.d[2]);
        appendFileSync(input.side, "ship " + input.tag + "\\n");
        await wait(input.d[3]);
        return { shipped: input.tag };
      },
    }),
    label: shell({
      effect: {
        key: ({ input }) => "label-" + input.tag,
        observe: ({ input }) => has(input.side, "label " + input.tag) ? { labelled: input.tag } : null,
      },
      exec: ({ input }) => ({
        command: "sh",
        args: ["-c", 'sleep "$1"; echo "label $2" >> "$3"; sleep "$1"', "label", String(input.d[4] / 1000), input.tag, input.side],
      }),
      parse: (_result, { input }) => ({ labelled: input.tag }),
    }),
    ask: checkpoint({ summary: ({ input }) => "Go on with " + input.tag + "?" }),
    tell: notify({ message: ({ input, outputs }) => "ledger " + input.tag + " answered " + JSON.stringify(outputs.ask) }),
    echo: shell({
      exec: ({ input }) => ({
        command: "sh",
        args: ["-c", 'sleep "$1"; echo "echo $2" >> "$3"; sleep "$1"', "echo", String(input.d[5] / 1000), input.tag, input.side],
      }),
      parse: (_result, { input }) => ({ echoed: input.tag }),
    }),
    finish: compute({ run: ({ input, outputs }) => ({ tag: input.tag, answer: outputs.ask }) }),
  },
  edges: [
    { from: "plan", to: "pay" },
    { from: "pay", to: "ship" },
    { from: "ship", to: "label" },
    { from: "label", to: "ask" },
    { from: "ask", to: "tell" },
    { from: "tell", to: "echo" },
    { from: "echo", to: "finish" },
  ],
});
`;

/** The side-effect lines of one ledger run, each of which must be in its side file once. */
export const LEDGER_LINES = ["pay", "ship", "label", "echo"];

/** Operator verdicts for the ledger's plain effects: what the node returns when it applied. */
export const LEDGER_APPLIED: Record<string, (tag: string) => unknown> = {
  pay: (tag) => ({ paid: tag }),
  echo: (tag) => ({ echoed: tag }),
};

/** Headless Pi: an agent group of three members at once, then a notify and a compute. */
export const FAN_SOURCE = `
import { agentGroup, compute, defineWorkflow, notify } from "@osolmaz/pi-workflows";
export default defineWorkflow({
  name: "fan",
  input: (raw) => raw,
  startAt: "crowd",
  nodes: {
    crowd: agentGroup({
      maxConcurrency: 3,
      agents: ({ input }) => ["north", "south", "east"].map((id) => ({
        id,
        prompt: "Report for " + id + " of " + input.tag + ".",
        expectedOutput: '{"ok": true}',
      })),
    }),
    tell: notify({ message: ({ input }) => "fan " + input.tag + " done" }),
    sum: compute({ run: ({ outputs }) => ({ succeeded: outputs.crowd.succeeded }) }),
  },
  edges: [{ from: "crowd", to: "tell" }, { from: "tell", to: "sum" }],
});
`;

/**
 * What a schedule fires every second during the kills: a managed effect keyed and read back by
 * the run's own id, so each run of it appends its line once (input: `{side}`, one file for all).
 */
export const TICK_SOURCE = `
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { action, defineWorkflow } from "@osolmaz/pi-workflows";
const has = (file, line) => existsSync(file) && readFileSync(file, "utf8").split("\\n").includes(line);
export default defineWorkflow({
  name: "tick",
  input: (raw) => raw,
  startAt: "mark",
  nodes: {
    mark: action({
      effect: {
        key: ({ state }) => "tick-" + state.runId,
        observe: ({ input, state }) => has(input.side, state.runId) ? { run: state.runId } : null,
      },
      run: ({ input, state }) => {
        appendFileSync(input.side, state.runId + "\\n");
        return { run: state.runId };
      },
    }),
  },
  edges: [],
});
`;

const EXAMPLES = join(ROOT, "examples");

export interface TrialRunSpec {
  kind: string;
  /** A path, absolute or relative to the project. */
  workflow: string;
  input: (tag: string, side: string, delays: number[]) => unknown;
  /** The answer to give when the run waits (a CLI argument list after the run id). */
  answer?: (tag: string) => string[];
  /** What the run's output must be, given its tag; undefined: any completed output. */
  output?: (tag: string) => unknown;
}

export const TRIAL_RUNS: TrialRunSpec[] = [
  {
    kind: "ledger",
    workflow: "ledger.workflow.ts",
    input: (tag, side, d) => ({ tag, side, d }),
    answer: (tag) => [JSON.stringify({ token: `ans-${tag}` })],
    output: (tag) => ({ tag, answer: { token: `ans-${tag}` } }),
  },
  {
    kind: "fan",
    workflow: "fan.workflow.ts",
    input: (tag) => ({ tag }),
    output: () => ({ succeeded: 3 }),
  },
  {
    kind: "hello",
    workflow: join(EXAMPLES, "hello.workflow.ts"),
    input: () => ({ name: "Ada" }),
    output: () => ({ message: "Hello, Ada!", steps: ["greet", "echo", "finish"] }),
  },
  {
    kind: "branch",
    workflow: join(EXAMPLES, "branch.workflow.ts"),
    input: () => ({ n: -1 }),
    output: () => ({ result: "-1 is negative", failure: "commandFailed" }),
  },
  {
    kind: "loop",
    workflow: join(EXAMPLES, "loop.workflow.ts"),
    input: () => ({ times: 6 }),
  },
  {
    kind: "checkpoint",
    workflow: join(EXAMPLES, "checkpoint.workflow.ts"),
    input: (tag) => ({ task: tag }),
    answer: (tag) => [JSON.stringify({ approved: true, note: tag })],
    output: (tag) => ({ applied: true, note: tag }),
  },
  {
    kind: "decision",
    workflow: join(EXAMPLES, "human-decision.workflow.ts"),
    input: (tag) => ({ version: tag }),
    answer: () => ["approve"],
    output: (tag) => ({ released: tag }),
  },
  {
    kind: "include",
    workflow: join(EXAMPLES, "include.workflow.ts"),
    input: (tag) => ({ text: tag }),
  },
  {
    kind: "two-turn",
    workflow: join(EXAMPLES, "two-turn-agent.workflow.ts"),
    input: (tag) => ({ task: tag }),
  },
];
