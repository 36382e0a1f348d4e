/**
 * `decision` asks the model to pick one of a fixed set of choices; `decisionEdge` routes on it.
 * Both check exhaustiveness when built, and the engine checks the model's answer at run time.
 */
import { WorkflowDefinitionError } from "./errors.ts";
import type {
  CommonNodeOptions,
  DecisionNode,
  ModelStepOptions,
  SwitchEdge,
  TextSpec,
} from "./types.ts";

export function decision<I = any, const C extends readonly string[] = readonly string[]>(
  options: CommonNodeOptions<I> & ModelStepOptions & {
    question: TextSpec<I>;
    choices: C;
    field?: string;
  },
): DecisionNode<I> {
  const { question, choices, field, ...rest } = options;
  checkChoices(choices, "decision");
  return { ...rest, kind: "decision", question, choices: [...choices], field: field ?? "route" };
}

export function decisionEdge<const C extends readonly string[]>(options: {
  from: string;
  choices: C;
  cases: { [K in C[number]]: string };
  field?: string;
}): SwitchEdge {
  checkChoices(options.choices, "decisionEdge");
  checkCases(options.from, options.choices, options.cases as Record<string, string>);
  return {
    from: options.from,
    switch: { on: `$.${options.field ?? "route"}`, cases: { ...options.cases } },
  };
}

export function checkChoices(choices: readonly string[], where: string): void {
  if (!Array.isArray(choices) || choices.length === 0) {
    throw new WorkflowDefinitionError("invalidDefinition", `Invalid ${where}: choices are empty`);
  }
  const seen = new Set<string>();
  for (const c of choices) {
    if (typeof c !== "string" || c.length === 0) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        `Invalid ${where}: every choice must be a non-empty string`,
      );
    }
    if (seen.has(c)) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        `Invalid ${where}: duplicate choice "${c}"`,
      );
    }
    seen.add(c);
  }
}

/** Every choice has a case and no case names an unknown choice. */
export function checkCases(
  from: string,
  choices: readonly string[],
  cases: Record<string, string>,
): void {
  const missing = choices.filter((c) => typeof cases?.[c] !== "string");
  if (missing.length > 0) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid edge from "${from}": no case for choice ${missing.map((m) => `"${m}"`).join(", ")}`,
    );
  }
  const extra = Object.keys(cases).filter((k) => !choices.includes(k));
  if (extra.length > 0) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid edge from "${from}": case ${extra.map((e) => `"${e}"`).join(", ")} is not a choice`,
    );
  }
}
