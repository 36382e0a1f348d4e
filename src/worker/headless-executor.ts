/**
 * Agent and decision steps of a headless run, each attempt in its own `pi --mode rpc` child:
 *
 *   spawn `pi --mode rpc --no-session --no-extensions -e <bridge> <recorded args>` (own group)
 *   -> hello to the bridge (the `workflow` tool with only update and submit)
 *   -> process.register with the host (start identity, under the live claim), awaited
 *   -> prompt: the step message of the shared step contract
 *   -> tool calls through the bridge: the step and attempt are checked, an update becomes a node
 *      update, a submission goes through the node's accept (normalize + validate); a rejection
 *      is the tool's error, so the model corrects and submits again
 *   -> a turn that ends without an accepted submission gets the contract's reminders, then the
 *      attempt fails (`noSubmission`); a turn that ended on a model error (Pi has already retried
 *      as its settings say) fails it with that error (`modelFailed`): a reminder would only meet
 *      the same error, and the failure would blame the agent for the provider
 *   -> the accepted output is the step's result; the Pi group is stopped and unregistered
 *      (tracked, so the worker exits only after it is down).
 *
 * An abort (deadline, pause or cancel, claim loss, the host gone) stops the group the same way.
 */
import { join } from "node:path";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { MAX_FRAME_BYTES, readFrames, writeFrame } from "../protocol/framing.ts";
import {
  type BridgeCall,
  bridgeHello,
  bridgeResult,
  parseBridgeCall,
} from "../protocol/pi-bridge-messages.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import type { AgentStepExecutor, AgentStepRequest } from "../workflows/agent-executor.ts";
import { NodeFailure } from "../workflows/errors.ts";
import type { ProcessGroupHooks } from "../workflows/shell-runner.ts";
import {
  acceptedText,
  buildStepContract,
  checkSubmitTarget,
  MAX_STEP_REMINDERS,
  noSubmissionError,
  rejectedText,
  reminderMessage,
  type StepContract,
} from "../workflows/step-contract.ts";
import { isCredentialName } from "../protocol/credential-names.ts";
import { trackCleanup } from "./child-cleanups.ts";
import { ensureBridgeFile } from "./pi-bridge-file.ts";
import { BRIDGE_TOOL } from "./pi-bridge-tool.ts";
import { type PiChild, problemLine, spawnPiChild } from "./pi-child.ts";

/** SIGTERM to SIGKILL for a Pi group (Pi shuts down promptly on SIGTERM). */
const PI_KILL_GRACE_MS = 1_000;
/** Bytes of each Pi stream kept on disk per attempt. */
const PI_TAIL_BYTES = 256 * 1024;
/** Dialogs an extension may open; a headless child answers them "cancelled" at once. */
const DIALOG_METHODS = new Set(["select", "confirm", "input", "editor"]);

export interface HeadlessExecutorOptions {
  /** The Pi command and recorded model arguments; null when the run has none. */
  pi: PiLaunch | null;
  projectPath: string;
  /** The host's state directory (it names it in every worker's environment). */
  stateDir: string | null;
  /** File stem of this worker epoch's captured output; Pi tails are `<stem>-pi<n>.out|.err`. */
  logStem: string;
  env: NodeJS.ProcessEnv;
  /** Registers the Pi group with the host before the prompt; unregisters it once it is down. */
  processGroups: ProcessGroupHooks;
}

let spawned = 0;

export function createHeadlessExecutor(options: HeadlessExecutorOptions): AgentStepExecutor {
  return { runStep: (request) => runHeadlessStep(options, request) };
}

async function runHeadlessStep(
  options: HeadlessExecutorOptions,
  request: AgentStepRequest,
): Promise<JsonValue> {
  if (options.pi === null) {
    throw new NodeFailure(
      "piUnavailable",
      `Agent step "${request.nodeId}" cannot run: no Pi command was recorded with this headless ` +
        "run; start it again with Pi installed (or PI_WORKFLOWS_PI set)",
    );
  }
  if (request.kind === "assistantMessage") {
    throw new NodeFailure(
      "needsOriginSession",
      `Step "${request.nodeId}" is a visible assistant message, which needs an origin Pi session`,
    );
  }
  const contract = buildStepContract({
    kind: "agent",
    runId: request.runId,
    workflowName: request.workflowName,
    nodeId: request.nodeId,
    attemptId: request.attemptId,
    prompt: request.prompt,
    expectedOutput: request.expectedOutput,
    statusDetail: request.statusDetail,
    deadlineAt: null,
  });
  if (request.signal.aborted) throw request.signal.reason;
  const stateDir = options.stateDir;
  if (!stateDir) {
    throw new NodeFailure("piUnavailable", "Worker not started by a host: no state directory");
  }
  const bridgeFile = ensureBridgeFile(stateDir);
  const child = spawnPiChild({
    command: options.pi.command,
    args: [
      "--mode",
      "rpc",
      "--no-session",
      "--no-extensions",
      "-e",
      bridgeFile,
      ...options.pi.args,
      // An allowlist still needs the bridge's tool, or the step could not be submitted.
      ...(request.tools ? ["--tools", [...request.tools, BRIDGE_TOOL.name].join(",")] : []),
    ],
    cwd: options.projectPath,
    env: options.env,
    tail: {
      dir: join(stateDir, "workers"),
      stem: `${options.logStem}-pi${++spawned}`,
      maxBytes: PI_TAIL_BYTES,
    },
  });
  let registered = false;
  const shutDown = async () => {
    await child.stop(PI_KILL_GRACE_MS);
    if (registered) await options.processGroups.stopped(child.pid).catch(() => {});
  };
  try {
    // Pi reads the hello while it loads the bridge; the pipe holds it until then.
    writeFrame(child.bridge, bridgeHello(BRIDGE_TOOL)).catch(() => {});
    await options.processGroups.started(child.pid);
    registered = true;
    return await driveStep(child, contract, request, secretsOf(options.env));
  } finally {
    // The outcome goes to the host now; the group is down before the worker exits.
    trackCleanup(shutDown());
  }
}

/** Runs the RPC session of one attempt until a submission is accepted or the attempt fails. */
function driveStep(
  child: PiChild,
  contract: StepContract,
  request: AgentStepRequest,
  secrets: readonly string[],
): Promise<JsonValue> {
  return new Promise<JsonValue>((resolve, reject) => {
    let done = false;
    let reminders = 0;
    /** Pi's error for the latest assistant message of the current agent run, if it failed. */
    let modelError: string | null = null;
    const cleanups: (() => void)[] = [];
    const finish = (settle: () => void) => {
      if (done) return;
      done = true;
      for (const undo of cleanups) undo();
      settle();
    };
    const fail = (code: string, message: string) =>
      finish(() => reject(new NodeFailure(code, message)));

    const onAbort = () => finish(() => reject(request.signal.reason));
    request.signal.addEventListener("abort", onAbort, { once: true });
    cleanups.push(() => request.signal.removeEventListener("abort", onAbort));

    child.exited.then((exit) => {
      const how = exit.signal ? `signal ${exit.signal}` : `exit code ${exit.code}`;
      const last = child.lastStderrLine();
      fail(
        "piExited",
        `Pi exited (${how}) before step "${contract.step}" was submitted${last ? `: ${last}` : ""}`,
      );
    });

    const prompt = (message: string) => {
      child.command({ type: "prompt", message }).then((response) => {
        if (!response.success && !done) {
          fail(
            "piPromptRefused",
            `Pi refused the prompt of step "${contract.step}": ${
              problemLine(String(response.error ?? ""), "first") || "no reason given"
            }`,
          );
        }
      });
    };

    cleanups.push(child.onRecord((record) => {
      if (record.type === "message_end") {
        const message = record.message as
          | { role?: unknown; stopReason?: unknown; errorMessage?: unknown }
          | undefined;
        if (message?.role === "assistant") {
          modelError = message.stopReason === "error"
            ? String(message.errorMessage ?? "") || "no reason given"
            : null;
        }
      } else if (record.type === "agent_settled") {
        if (done) return;
        if (modelError !== null) {
          fail(
            "modelFailed",
            `The model failed during step "${contract.step}": ${
              redact(problemLine(modelError, "first"), secrets)
            }`,
          );
          return;
        }
        if (reminders < MAX_STEP_REMINDERS) {
          reminders++;
          prompt(reminderMessage(contract, reminders));
          return;
        }
        const error = noSubmissionError(contract);
        fail(error.code, error.message);
      } else if (
        record.type === "extension_ui_request" && DIALOG_METHODS.has(String(record.method))
      ) {
        child.send({ type: "extension_ui_response", id: record.id, cancelled: true });
      }
    }));

    // Tool calls, one at a time, in the order the bridge sent them.
    void (async () => {
      let queue: Promise<void> = Promise.resolve();
      for await (const frame of readFrames(child.bridge, { maxBytes: MAX_FRAME_BYTES })) {
        if (!frame.ok) continue;
        const call = parseBridgeCall(frame.value);
        if (!call.ok) continue;
        queue = queue.then(() => answer(call.value));
      }
    })().catch(() => {});

    const reply = (callId: string, verdict: { ok: boolean; text: string; terminate?: boolean }) =>
      writeFrame(child.bridge, bridgeResult(callId, verdict)).catch(() => {});

    const answer = async (call: BridgeCall): Promise<void> => {
      const params = call.params;
      if (done) {
        await reply(call.callId, {
          ok: false,
          text: "This step is already finished: end your turn.",
        });
        return;
      }
      const action = params.action;
      if (action !== "submit" && action !== "update") {
        await reply(call.callId, {
          ok: false,
          text: `Unknown action ${JSON.stringify(action)}: use "submit" or "update"`,
        });
        return;
      }
      const mismatch = checkSubmitTarget(contract, params, action);
      if (mismatch) {
        await reply(call.callId, { ok: false, text: mismatch.message });
        return;
      }
      if (action === "update") {
        await reply(call.callId, publish(request, params.update));
        return;
      }
      if (!Object.hasOwn(params, "output")) {
        await reply(call.callId, {
          ok: false,
          text: rejectedText(contract, 'Output rejected: "output" is missing'),
        });
        return;
      }
      const verdict = await request.accept(params.output);
      if (done) return;
      if (!verdict.ok) {
        await reply(call.callId, { ok: false, text: rejectedText(contract, verdict.message) });
        return;
      }
      await reply(call.callId, { ok: true, text: acceptedText(contract), terminate: true });
      finish(() => resolve(verdict.output));
    };

    prompt(contract.message);
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

/**
 * The run's credential values (what Pi got in its environment): a provider's error text may quote
 * the key it refused, and the failure is stored with the run and shown by `status`. Values under
 * 8 characters are no key and would only garble the message.
 */
function secretsOf(env: NodeJS.ProcessEnv): string[] {
  return Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && isCredentialName(name))
    .map(([, value]) => value!);
}

function redact(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join("[redacted]");
  return out;
}
