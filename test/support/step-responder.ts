/**
 * A fake-model script that plays a model doing workflow steps: it reads the step contract from
 * the latest step message (the exact `workflow` tool `submit` JSON the message shows), and answers
 * with a `workflow` tool call carrying that JSON plus an output the test chooses. After the tool
 * result it ends the turn with a short text. Tests that need other moves (a bad output first, an
 * `update`, a reply that never submits) pass their own `decide`.
 */
import {
  type FakeModelRequest,
  type FakeReply,
  type FakeScript,
  messageText,
} from "./fake-model.ts";

/** The `submit` arguments a step message shows, with `step` and `attempt` filled in. */
export interface SubmitContract {
  action: "submit";
  step: string;
  attempt: string;
  [key: string]: unknown;
}

/**
 * Every JSON object embedded in `text` (outermost ones, scanning left to right), so a contract
 * block can be read without knowing its exact wording.
 */
export function jsonObjectsIn(text: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  let i = text.indexOf("{");
  while (i !== -1) {
    const end = balancedEnd(text, i);
    if (end !== -1) {
      try {
        const value = JSON.parse(text.slice(i, end + 1));
        if (value && typeof value === "object" && !Array.isArray(value)) {
          found.push(value as Record<string, unknown>);
          i = text.indexOf("{", end + 1);
          continue;
        }
      } catch {
        // Not JSON (prose braces): try the next opening brace.
      }
    }
    i = text.indexOf("{", i + 1);
  }
  return found;
}

/** Index of the brace closing the object opened at `start`, string-aware; -1 when unbalanced. */
function balancedEnd(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === "\\") i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === "{") depth++;
    else if (c === "}" && --depth === 0) return i;
  }
  return -1;
}

/** The last `submit` contract shown in `text`, if any. */
export function submitContractIn(text: string): SubmitContract | undefined {
  return jsonObjectsIn(text).findLast((value): value is SubmitContract =>
    value.action === "submit" && typeof value.step === "string" &&
    typeof value.attempt === "string"
  );
}

/** The last `update` contract shown in `text`, if any. */
export function updateContractIn(text: string): Record<string, unknown> | undefined {
  return jsonObjectsIn(text).findLast((value) =>
    value.action === "update" && typeof value.step === "string"
  );
}

/** A `workflow` tool call submitting `output` under `contract`. */
export function submitCall(contract: SubmitContract, output: unknown): FakeReply {
  return { kind: "tool", name: "workflow", args: { ...contract, output } };
}

export interface StepResponderOptions {
  /**
   * The output to submit for a step (default `{ "ok": true }`). `rejections` counts the tool
   * results since the step message that were not an acceptance (0 for the first try).
   */
  output?: (contract: SubmitContract, request: FakeModelRequest, rejections: number) => unknown;
  /** Tries after a rejected submission before the model gives up with text (default 3). */
  maxRetries?: number;
  /**
   * Full control: return a reply, or undefined for the default move. Called for every request,
   * with the contract of the latest step message when there is one.
   */
  decide?: (
    request: FakeModelRequest,
    contract: SubmitContract | undefined,
  ) => FakeReply | Promise<FakeReply> | undefined;
  /** Text that ends the turn after a tool result (default "Step submitted."). */
  doneText?: string;
}

/** A tool result the workflow tool gives on success (everything else is a refusal). */
export function isAcceptance(text: string | undefined): boolean {
  return text !== undefined &&
    /^(Output accepted|Update recorded|Queued workflow|Answered)/.test(text);
}

/** Tool results since the last user message that were refusals. */
export function rejectionsSinceStep(request: FakeModelRequest): number {
  const lastUser = request.messages.findLastIndex((message) => message.role === "user");
  return request.messages.slice(lastUser + 1).filter((message) =>
    message.role === "tool" && !isAcceptance(messageText(message))
  ).length;
}

/**
 * The default model: a step message gets a submit call; a refused submission is tried again
 * (the output function sees how many were refused); an accepted one ends the turn with text;
 * anything else gets a plain text answer.
 */
export function stepResponder(options: StepResponderOptions = {}): FakeScript {
  return (request) => {
    const contract = submitContractIn(request.lastUserText);
    const decided = options.decide?.(request, contract);
    if (decided) return decided;
    const submit = (found: SubmitContract, rejections: number) =>
      submitCall(found, options.output?.(found, request, rejections) ?? { ok: true });
    if (request.lastRole === "tool") {
      const rejections = rejectionsSinceStep(request);
      if (
        contract && !isAcceptance(request.lastToolResult) &&
        rejections <= (options.maxRetries ?? 3)
      ) {
        return submit(contract, rejections);
      }
      return { kind: "text", text: options.doneText ?? "Step submitted." };
    }
    if (contract && request.toolNames.includes("workflow")) return submit(contract, 0);
    return { kind: "text", text: "Nothing to do." };
  };
}
