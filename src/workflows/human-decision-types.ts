/**
 * The data a human decision node declares and records: its choices, the request shown to the
 * person, and the answer (types.ts re-exports them with the node types).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { PresentationBlock } from "../protocol/decision-request.ts";

export interface TextInputSpec {
  name: string;
  prompt: string;
  minLength: number;
  maxLength: number;
}

export interface HumanChoice {
  label: string;
  input?: TextInputSpec;
}

export type HumanChoices = Readonly<Record<string, HumanChoice>>;

export interface HumanDecisionRequest {
  title: string;
  /** What the decision is about: any JSON value (a string, the plan object, ...). */
  subject: JsonValue;
  presentation: DecisionPresentation;
  revision?: number;
}

export interface DecisionPresentation {
  schema: "pi-workflows.decision-presentation.v1";
  summary: string;
  blocks: PresentationBlock[];
}

/** The block kinds of a decision presentation (one definition, in the protocol). */
export type { PresentationBlock };

export interface HumanDecisionTimeout {
  afterMs: number;
  response: HumanDecisionResponse;
}

export interface HumanDecisionResponse {
  choice: string;
  text?: string;
  /** 0.12's form of the text, `{<textInput name>: text}`: accepted, recorded as `text`. */
  input?: Record<string, string>;
}
