/**
 * Protected human decisions: a checkpoint only a person answers (never the model tool), with
 * typed choices, optional free text, a structured presentation and an optional timeout default.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { checkCases } from "./decision.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import type {
  DecisionPresentation,
  HumanChoice,
  HumanChoices,
  HumanDecisionRequest,
  HumanDecisionResponse,
  HumanDecisionTimeout,
  PresentationBlock,
  TextInputSpec,
} from "./human-decision-types.ts";
import type { CommonNodeOptions, HumanDecisionNode, NodeContext, SwitchEdge } from "./types.ts";

export const PRESENTATION_LIMITS = {
  blocks: 256,
  items: 256,
  stringChars: 16_000,
  totalChars: 64_000,
} as const;

export function defineHumanChoices<const C extends Record<string, HumanChoice>>(choices: C): C {
  const keys = Object.keys(choices ?? {});
  if (keys.length === 0) {
    throw new WorkflowDefinitionError("invalidDefinition", "Invalid human choices: none given");
  }
  return Object.freeze({ ...choices });
}

export function choice(options: { label: string; input?: TextInputSpec }): HumanChoice {
  return { ...options };
}

export function textInput(options: {
  name: string;
  prompt: string;
  minLength?: number;
  maxLength?: number;
}): TextInputSpec {
  return { minLength: 1, maxLength: 4000, ...options };
}

export function humanDecision<I = any>(
  options: CommonNodeOptions<I> & {
    audience?: HumanDecisionNode<I>["audience"];
    choices: HumanChoices;
    request: (ctx: NodeContext<I>) => HumanDecisionRequest | Promise<HumanDecisionRequest>;
    onTimeout?: HumanDecisionTimeout | ((ctx: NodeContext<I>) => HumanDecisionTimeout | null);
  },
): HumanDecisionNode<I> {
  const node: HumanDecisionNode<I> = {
    ...options,
    audience: options.audience ?? "owner",
    kind: "humanDecision",
  };
  if (options.onTimeout && typeof options.onTimeout !== "function") {
    const problem = checkTimeout(options.choices, options.onTimeout);
    if (problem) {
      throw new WorkflowDefinitionError("invalidDefinition", `Invalid humanDecision ${problem}`);
    }
  }
  return node;
}

export function humanDecisionEdge<const C extends HumanChoices>(options: {
  from: string;
  choices: C;
  cases: { [K in keyof C & string]: string };
}): SwitchEdge {
  checkCases(options.from, Object.keys(options.choices), options.cases as Record<string, string>);
  return { from: options.from, switch: { on: "$.choice", cases: { ...options.cases } } };
}

/** A problem with an `onTimeout` value (`"onTimeout ...: detail"`), or null when it is valid. */
export function checkTimeout(choices: HumanChoices, timeout: unknown): string | null {
  const t = timeout as Partial<HumanDecisionTimeout> | null;
  if (typeof t !== "object" || t === null) return "onTimeout: expected {afterMs, response}";
  if (typeof t.afterMs !== "number" || !Number.isInteger(t.afterMs) || t.afterMs < 1) {
    return "onTimeout afterMs: expected a positive integer of milliseconds";
  }
  const checked = validateHumanResponse(choices, t.response);
  return checked.ok ? null : `onTimeout response: ${checked.message}`;
}

/** Checks a person's answer against the choices; returns the normalized response. */
export function validateHumanResponse(
  choices: HumanChoices,
  raw: unknown,
): { ok: true; response: HumanDecisionResponse } | { ok: false; message: string } {
  const names = Object.keys(choices);
  let value = raw;
  if (typeof value === "string") value = { choice: value };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return { ok: false, message: `expected {"choice": one of ${names.join(", ")}}` };
  }
  const { choice: picked, input } = value as { choice?: unknown; input?: unknown };
  let { text } = value as { text?: unknown };
  if (typeof picked !== "string" || !names.includes(picked)) {
    return { ok: false, message: `choice must be one of ${names.join(", ")}` };
  }
  const spec = choices[picked].input;
  // 0.12 wrote the text as `input: {<textInput name>: text}`: the same answer.
  if (input !== undefined && text === undefined) {
    const entries = typeof input === "object" && input !== null && !Array.isArray(input)
      ? Object.entries(input)
      : null;
    if (!spec) return { ok: false, message: `choice "${picked}" takes no text` };
    if (entries?.length !== 1 || entries[0][0] !== spec.name) {
      return { ok: false, message: `input must be {"${spec.name}": text} (or give text)` };
    }
    text = entries[0][1];
  }
  if (!spec) {
    if (text !== undefined) {
      return { ok: false, message: `choice "${picked}" takes no text` };
    }
    return { ok: true, response: { choice: picked } };
  }
  if (typeof text !== "string") {
    return { ok: false, message: `choice "${picked}" needs text (${spec.prompt})` };
  }
  const trimmed = text.trim();
  if (trimmed.length < spec.minLength || trimmed.length > spec.maxLength) {
    return {
      ok: false,
      message: `text for "${picked}" must be ${spec.minLength}-${spec.maxLength} characters`,
    };
  }
  return { ok: true, response: { choice: picked, text: trimmed } };
}

/**
 * A recorded answer as callbacks read it: `{choice, text}`, plus 0.12's form of the text,
 * `input: {<textInput name>: text}`, when the choice takes text. The record keeps `{choice, text}`
 * (the protocol's response shape); 0.12 code reading `outputs.<id>.input.<name>` gets the text.
 */
export function answerAsRead(choices: HumanChoices, answer: JsonValue): JsonValue {
  if (typeof answer !== "object" || answer === null || Array.isArray(answer)) return answer;
  const { choice: picked, text } = answer;
  if (typeof picked !== "string" || typeof text !== "string" || answer.input !== undefined) {
    return answer;
  }
  const spec = Object.hasOwn(choices, picked) ? choices[picked].input : undefined;
  return spec ? { ...answer, input: { [spec.name]: text } } : answer;
}

/** Checks a request's presentation against the size limits; throws a clear error. */
export function checkPresentation(p: DecisionPresentation): void {
  if (typeof p !== "object" || p === null || Array.isArray(p)) {
    throw new TypeError(
      'Invalid decision presentation: expected an object {schema: "pi-workflows.decision-presentation.v1", summary, blocks}',
    );
  }
  if (p.schema !== "pi-workflows.decision-presentation.v1") {
    const problem = p.schema === undefined ? "schema is missing: set it to" : "schema must be";
    throw new TypeError(
      `Invalid decision presentation: ${problem} "pi-workflows.decision-presentation.v1"`,
    );
  }
  let total = 0;
  let blocks = 0;
  const str = (s: unknown, where: string) => {
    if (typeof s !== "string") throw new TypeError(`Invalid decision presentation: ${where}`);
    if (s.length > PRESENTATION_LIMITS.stringChars) {
      throw new RangeError(`Invalid decision presentation: ${where} is over 16000 characters`);
    }
    total += s.length;
  };
  const walk = (list: PresentationBlock[]) => {
    if (!Array.isArray(list)) throw new TypeError("Invalid decision presentation: blocks");
    for (const b of list) {
      if (++blocks > PRESENTATION_LIMITS.blocks) {
        throw new RangeError("Invalid decision presentation: more than 256 blocks");
      }
      if (b.kind === "paragraph" || b.kind === "preformatted") str(b.text, `${b.kind} text`);
      else if (b.kind === "section") {
        str(b.title, "section title");
        walk(b.blocks ?? []);
      } else if (b.kind === "bullets" || b.kind === "fields") {
        if (!Array.isArray(b.items) || b.items.length > PRESENTATION_LIMITS.items) {
          throw new RangeError(`Invalid decision presentation: ${b.kind} needs at most 256 items`);
        }
        for (const item of b.items) {
          if (typeof item === "string") str(item, "bullet");
          else {
            str(item?.label, "field label");
            str(item?.value, "field value");
          }
        }
      } else throw new TypeError(`Invalid decision presentation: unknown block kind`);
    }
  };
  str(p.summary, "summary");
  walk(p.blocks);
  if (total > PRESENTATION_LIMITS.totalChars) {
    throw new RangeError("Invalid decision presentation: over 64000 characters in total");
  }
}
