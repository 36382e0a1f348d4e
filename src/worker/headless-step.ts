/**
 * One agent or decision step driven through a running Pi's RPC session, until a submission is
 * accepted or the step fails:
 *
 *   prompt (the step message) -> Pi's records, each to its handler below -> tool calls through
 *   the bridge (`onToolCall`): the step and attempt are checked, an update becomes a node
 *   update, a submission goes through the node's accept (normalize + validate); a rejection is
 *   the tool's error, so the model corrects and submits again
 *   -> a turn that ends (`agent_settled`) without an accepted submission gets the contract's
 *   reminders, then the step fails (`noSubmission`); a turn that ended on a model error (Pi has
 *   already retried as its settings say) fails it with that error (`modelFailed`)
 *   -> Pi exiting on its own fails the step (`piExited`, with Pi's first error line); Pi killed
 *   by a signal rejects with `PiKilled`, which the worker treats as an interrupted attempt.
 *
 * Each kind of RPC record has one small handler (`onMessageEnd`, `onAgentSettled`,
 * `onUiRequest`); the usage of each model call is read beside them (pi-usage.ts).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { BridgeCall } from "../protocol/pi-bridge-messages.ts";
import { boundedRejection } from "../protocol/submissions.ts";
import type { AcceptResult, AgentStepRequest } from "../workflows/agent-executor.ts";
import { NodeFailure } from "../workflows/errors.ts";
import {
  acceptedText,
  checkSubmitTarget,
  MAX_STEP_REMINDERS,
  noSubmissionError,
  rejectedText,
  reminderMessage,
  type StepContract,
} from "../workflows/step-contract.ts";
import type { StepPi } from "./headless-pi.ts";
import { BRIDGE_TOOL } from "./pi-bridge-tool.ts";
import { redact } from "./secret-values.ts";
import { type PiExit, problemLine, type RpcRecord } from "./pi-child.ts";
import { createUsageMeter, type UsageMeter } from "./pi-usage.ts";

/** Dialogs an extension may open; a headless child answers them "cancelled" at once. */
const DIALOG_METHODS = new Set(["select", "confirm", "input", "editor"]);
/** Longest wait, after a submission is accepted, for the record of the model call that made it. */
const CALL_RECORD_BOUND_MS = 10_000;

/** Pi died by a signal (the OOM killer, a kill): the attempt was interrupted, not failed. */
export class PiKilled extends Error {
  readonly signal: string;
  constructor(signal: string, step: string) {
    super(`Pi was killed by ${signal} during step "${step}"`);
    this.signal = signal;
    this.name = "PiKilled";
  }
}

/** The state of one step on one Pi, shared by the handlers. */
interface StepRun {
  readonly pi: StepPi;
  readonly contract: StepContract;
  readonly request: AgentStepRequest;
  /** Credential values to keep out of a stored failure message. */
  readonly secrets: readonly string[];
  /** What each model call of the step used (pi-usage.ts). */
  readonly usage: UsageMeter;
  reminders: number;
  /** A submission was accepted: the step succeeds once its model call is counted. */
  accepted: boolean;
  /** Rejected submissions of this step so far, and the last rejection's message. */
  rejected: { count: number; last: string | null };
  /** Pi's error for the latest assistant message of the current agent run, if it failed. */
  modelError: string | null;
  done: boolean;
  succeed(output: JsonValue): void;
  fail(error: Error): void;
  prompt(message: string): void;
}

/**
 * Sends `message` (the step message, with any note before it) and resolves with the accepted
 * output.
 */
export function driveStep(
  pi: StepPi,
  contract: StepContract,
  request: AgentStepRequest,
  secrets: readonly string[],
  message: string,
): Promise<JsonValue> {
  return new Promise<JsonValue>((resolve, reject) => {
    const cleanups: (() => void)[] = [];
    const finish = (settle: () => void) => {
      if (step.done) return;
      step.done = true;
      for (const undo of cleanups) undo();
      settle();
    };
    // What each model call of the step used, reported as it ends (pi-usage.ts).
    const usage = createUsageMeter(request.reportUsage ?? (() => {}), BRIDGE_TOOL.name);
    const step: StepRun = {
      pi,
      contract,
      request,
      secrets,
      usage,
      reminders: 0,
      accepted: false,
      rejected: { count: 0, last: null },
      modelError: null,
      done: false,
      succeed: (output) => finish(() => resolve(output)),
      fail: (error) => finish(() => reject(error)),
      prompt: (text) => sendPrompt(step, text),
    };
    const onAbort = () => {
      if (!step.accepted) step.fail(request.signal.reason);
    };
    request.signal.addEventListener("abort", onAbort, { once: true });
    cleanups.push(() => request.signal.removeEventListener("abort", onAbort));
    pi.child.exited.then((exit) => onPiExit(step, exit));
    cleanups.push(pi.child.onRecord((record) => usage.observe(record)));
    cleanups.push(pi.child.onRecord((record) => onRecord(step, record)));
    pi.onCall = (call) => onToolCall(step, call);
    step.prompt(message);
  });
}

function onRecord(step: StepRun, record: RpcRecord): void {
  switch (record.type) {
    case "message_end":
      return onMessageEnd(step, record);
    case "agent_settled":
      return onAgentSettled(step);
    case "extension_ui_request":
      return onUiRequest(step, record);
  }
}

/** Remembers whether the model's latest message ended on an error. */
function onMessageEnd(step: StepRun, record: RpcRecord): void {
  const message = record.message as
    | { role?: unknown; stopReason?: unknown; errorMessage?: unknown }
    | undefined;
  if (message?.role !== "assistant") return;
  step.modelError = message.stopReason === "error"
    ? String(message.errorMessage ?? "") || "no reason given"
    : null;
}

/** A turn ended: a model error fails the step, no submission gets a reminder or fails it. */
function onAgentSettled(step: StepRun): void {
  if (step.done || step.accepted) return;
  if (step.modelError !== null) {
    step.fail(
      new NodeFailure(
        "modelFailed",
        `The model failed during step "${step.contract.step}": ${
          redact(problemLine(step.modelError), step.secrets)
        }`,
      ),
    );
    return;
  }
  if (step.reminders < MAX_STEP_REMINDERS) {
    step.reminders++;
    step.prompt(reminderMessage(step.contract, step.reminders));
    return;
  }
  const error = noSubmissionError(step.contract, step.rejected);
  step.fail(new NodeFailure(error.code, error.message));
}

/** Nobody is there to answer an extension's dialog: cancelled at once. */
function onUiRequest(step: StepRun, record: RpcRecord): void {
  if (!DIALOG_METHODS.has(String(record.method))) return;
  step.pi.child.send({ type: "extension_ui_response", id: record.id, cancelled: true });
}

/**
 * Killed by a signal: an interrupted attempt. Exited on its own: the step fails with Pi's first
 * error line (read once stderr is drained: it may arrive after the exit).
 */
async function onPiExit(step: StepRun, exit: PiExit): Promise<void> {
  if (step.done || step.accepted) return;
  if (exit.signal) {
    step.fail(new PiKilled(exit.signal, step.contract.step));
    return;
  }
  await step.pi.child.drained;
  const error = step.pi.child.firstStderrError();
  step.fail(
    new NodeFailure(
      "piExited",
      `Pi exited (exit code ${exit.code}) before step "${step.contract.step}" was submitted${
        error ? `: ${redact(error, step.secrets)}` : ""
      }`,
    ),
  );
}

function sendPrompt(step: StepRun, message: string): void {
  step.pi.child.command({ type: "prompt", message }).then((response) => {
    if (response.success || step.done || step.pi.exit !== null) return;
    step.fail(
      new NodeFailure(
        "piPromptRefused",
        `Pi refused the prompt of step "${step.contract.step}": ${
          problemLine(String(response.error ?? "")) || "no reason given"
        }`,
      ),
    );
  });
}

async function onToolCall(step: StepRun, call: BridgeCall): Promise<void> {
  const reply = (verdict: { ok: boolean; text: string; terminate?: boolean }) =>
    step.pi.reply(call.callId, verdict);
  const params = call.params;
  if (step.done) {
    reply({ ok: false, text: "This step is already finished: end your turn." });
    return;
  }
  const action = params.action;
  if (action !== "submit" && action !== "update") {
    reply({
      ok: false,
      text: `Unknown action ${JSON.stringify(action)}: use "submit" or "update"`,
    });
    return;
  }
  const mismatch = checkSubmitTarget(step.contract, params, action);
  if (mismatch) {
    reply({ ok: false, text: mismatch.message });
    return;
  }
  if (action === "update") {
    reply(publish(step.request, params.update));
    return;
  }
  const verdict: AcceptResult = Object.hasOwn(params, "output")
    ? await step.request.accept(params.output)
    : { ok: false, message: 'Output rejected: "output" is missing' };
  if (step.done) return;
  // Counted (and recorded by the host) before the model hears the verdict.
  try {
    await step.request.reportSubmission?.(
      verdict.ok ? { accepted: true } : { accepted: false, message: verdict.message },
    );
  } catch (error) {
    step.fail(error as Error);
    return;
  }
  if (step.done) return;
  if (!verdict.ok) {
    step.rejected = { count: step.rejected.count + 1, last: boundedRejection(verdict.message) };
    reply({ ok: false, text: rejectedText(step.contract, verdict.message) });
    return;
  }
  reply({ ok: true, text: acceptedText(step.contract), terminate: true });
  step.accepted = true;
  await untilCounted(step, call.toolCallId);
  step.succeed(verdict.output);
}

/**
 * Pi prints its RPC records through a write queue, while a tool call reaches the bridge on a pipe
 * of its own: an accepted submission can arrive before the record of the model call that made
 * it. The step ends once that record is read (so the outcome carries the call's usage, and the
 * run's budget sees it before the next step), Pi is gone, the step is aborted, or after a bound.
 */
function untilCounted(step: StepRun, toolCallId: string): Promise<void> {
  if (step.usage.counted(toolCallId)) return Promise.resolve();
  return new Promise((resolve) => {
    const signal = step.request.signal;
    const done = () => {
      clearTimeout(timer);
      stopListening();
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, CALL_RECORD_BOUND_MS);
    // Added after the meter's listener: it has observed the record when this one runs.
    const stopListening = step.pi.child.onRecord(() => {
      if (step.usage.counted(toolCallId)) done();
    });
    signal.addEventListener("abort", done, { once: true });
    step.pi.child.drained.then(done);
  });
}

function publish(
  request: AgentStepRequest,
  update: JsonValue | undefined,
): { ok: boolean; text: string } {
  if (typeof update !== "object" || update === null || Array.isArray(update)) {
    return { ok: false, text: 'Update refused: send "update": {"type": "...", "data": ...}' };
  }
  try {
    request.publishUpdate({
      type: String(update.type ?? ""),
      key: typeof update.key === "string" ? update.key : "",
      data: update.data ?? null,
    });
  } catch (error) {
    return { ok: false, text: `Update refused: ${(error as Error).message}` };
  }
  return { ok: true, text: "Update recorded." };
}
