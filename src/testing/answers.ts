/**
 * What a test scripts in place of the model and the people: `answers` per step id (a value, a
 * list for successive submissions, or a function of the prompt and contract) and `human` per
 * checkpoint or decision node id. `timeOut` lets a wait run into its deadline instead.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import type { DefinitionSnapshot } from "../protocol/definition-snapshot.ts";
import type { StepContract } from "../protocol/step-contract-schema.ts";

const TIME_OUT_BRAND = Symbol.for("pi-workflows.testing.timeOut");

/** Answer with this to let a step, checkpoint or decision reach its deadline (virtual time). */
export const timeOut: { readonly [TIME_OUT_BRAND]: true } = Object.freeze({
  [TIME_OUT_BRAND]: true as const,
});
export type TimeOut = typeof timeOut;

export function isTimeOut(value: unknown): value is TimeOut {
  return typeof value === "object" && value !== null &&
    (value as Record<symbol, unknown>)[TIME_OUT_BRAND] === true;
}

/** What an answer function is told about the step it answers. */
export interface StepAsk {
  /** The node id (`mount/child` inside includes). */
  step: string;
  /** 1 for the first submission of this step in the run, 2 for the next, ... */
  submission: number;
  /** The validate error of the previous submission, when it was rejected. */
  rejection: string | null;
  /** The step contract as the Pi session receives it (the whole message included). */
  contract: StepContract;
}

export type StepAnswerFn = (prompt: string, ask: StepAsk) => unknown;
/**
 * A model step's scripted output, or (action and shell nodes) a scripted result in place of
 * running the node. A list scripts successive submissions (model steps) or visits (actions); an
 * output that is itself a list is returned from a function.
 */
export type StepAnswer = JsonValue | TimeOut | StepAnswerFn | readonly (JsonValue | TimeOut)[];

export type HumanAnswerFn = (waiting: Waiting) => unknown;
/**
 * A checkpoint's answer (its JSON), a human decision's answer (a choice id, or
 * `{choice, text}`), `timeOut`, a list for successive visits, or a function of what the run
 * waits on (`status --json`'s `waiting`).
 */
export type HumanAnswer = JsonValue | TimeOut | HumanAnswerFn | readonly (JsonValue | TimeOut)[];

/** A step the test gave no (more) answers for, or whose answers were all rejected. */
export class MissingAnswerError extends Error {
  readonly step: string;
  readonly prompt: string;
  constructor(step: string, prompt: string, reason: string) {
    super(`${reason}\n--- prompt of step "${step}" ---\n${prompt}\n--- end of prompt ---`);
    this.name = "MissingAnswerError";
    this.step = step;
    this.prompt = prompt;
  }
}

/** The node prompt of a step message (the message minus the contract block). */
export function promptOf(contract: StepContract): string {
  const cut = contract.message.lastIndexOf("\n\n---\nWorkflow step contract");
  return cut < 0 ? contract.message : contract.message.slice(0, cut);
}

/** Answers whose values cross to the worker as scripted results (JSON, not functions). */
export function scriptedResults(
  answers: Readonly<Record<string, StepAnswer>>,
): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const [node, answer] of Object.entries(answers)) {
    if (typeof answer === "function" || isTimeOut(answer)) continue;
    if (Array.isArray(answer) && answer.some(isTimeOut)) continue;
    out[node] = answer as JsonValue;
  }
  return out;
}

/** Kinds `human` answers, and kinds `answers` scripts (model steps, and nodes that act). */
const HUMAN_KINDS: ReadonlySet<string> = new Set(["checkpoint", "humanDecision"]);
const SCRIPTED_KINDS: ReadonlySet<string> = new Set([
  "agent",
  "decision",
  "assistantMessage",
  "action",
  "shell",
]);

/**
 * Refuses an `answers` or `human` key the run could never use: one naming no node of the
 * workflow (a typo), or a node of a kind it does not script. Such a key is otherwise silently
 * ignored, and the test ends waiting or runs the real node with nothing saying why.
 */
export function checkScriptedNodes(
  definition: DefinitionSnapshot,
  answers: Readonly<Record<string, unknown>>,
  human: Readonly<Record<string, unknown>>,
): void {
  const check = (option: string, keys: string[], kinds: ReadonlySet<string>, what: string) => {
    const fitting = Object.keys(definition.nodes).filter((id) =>
      kinds.has(definition.nodes[id]!.kind)
    );
    for (const key of keys) {
      const kind = definition.nodes[key]?.kind;
      if (kind !== undefined && kinds.has(kind)) continue;
      const found = kind === undefined
        ? `which is not a node of workflow "${definition.name}"`
        : `${/^[aeiou]/i.test(kind) ? "an" : "a"} ${kind} node of workflow "${definition.name}"`;
      throw new TypeError(
        `testWorkflow: ${option} has "${key}", ${found}; ${option} ${what}: ` +
          (fitting.length > 0 ? fitting.join(", ") : "it has none"),
      );
    }
  };
  check("human", Object.keys(human), HUMAN_KINDS, "answers its checkpoints and human decisions");
  check(
    "answers",
    Object.keys(answers),
    SCRIPTED_KINDS,
    "scripts its model steps (agent, decision, assistantMessage), actions and shell nodes",
  );
}
