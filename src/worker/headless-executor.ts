/**
 * Agent and decision steps of a headless run, as prompts of the run's one Pi conversation:
 *
 *   the run's session file (host-chosen, headless-session.ts) -> the run's Pi of this worker
 *   generation, kept between steps or started on that file (headless-pi.ts) -> the step message,
 *   with a note when the step's earlier attempt was interrupted (its cut-off turn stays in the
 *   conversation as Pi left it) -> the step driven to an accepted output or a failure
 *   (headless-step.ts) -> the Pi kept for the next step, or stopped when the step was aborted
 *   (deadline, pause or cancel, claim loss, the host gone) or Pi died.
 *
 * Agent group members run in parallel, each on a Pi and a session of its own (forked from the
 * run's session at the member's first start). Pi killed by a signal interrupts the attempt
 * (`interrupt`): the worker stops as after a crash, and the next worker runs the step again on a
 * new Pi continuing the same conversation.
 */
import { join } from "node:path";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { PiContext, PiLaunch } from "../protocol/pi-launch.ts";
import { secretsOf } from "./secret-values.ts";
import type { AgentStepExecutor, AgentStepRequest } from "../workflows/agent-executor.ts";
import { NodeFailure } from "../workflows/errors.ts";
import type { ProcessGroupHooks } from "../workflows/shell-runner.ts";
import { buildStepContract, type StepContract } from "../workflows/step-contract.ts";
import { headlessPiArgs } from "./headless-pi-args.ts";
import {
  acquireRunPi,
  keepRunPi,
  startStepPi,
  type StepPi,
  type StepPiStart,
  stopStepPi,
} from "./headless-pi.ts";
import { memberSessionArgs, restrictSessionFiles, runSessionArgs } from "./headless-session.ts";
import { driveStep, PiKilled } from "./headless-step.ts";
import { ensureBridgeFile } from "./pi-bridge-file.ts";

/** Bytes of each Pi stream kept on disk per Pi child. */
const PI_TAIL_BYTES = 256 * 1024;

export interface HeadlessExecutorOptions {
  /** The Pi command and recorded model arguments; null when the run has none. */
  pi: PiLaunch | null;
  /** The run's session file (host-chosen); null for a run without one (interactive groups). */
  sessionFile: string | null;
  /** The directory of the run's sessions (`members/` goes under it). */
  sessionsRoot: string;
  projectPath: string;
  /** The host's state directory (it names it in every worker's environment). */
  stateDir: string | null;
  /** File stem of this worker epoch's captured output; Pi tails are `<stem>-pi<n>.out|.err`. */
  logStem: string;
  env: NodeJS.ProcessEnv;
  /** Registers the Pi group with the host before the prompt; unregisters it once it is down. */
  processGroups: ProcessGroupHooks;
  /** The step's group node visit (agent group members' sessions are per visit). */
  visit: number;
  /** Set when this node's previous attempt was interrupted: the step is presented again. */
  interruptedAttempt: string | null;
  /** Pi died by a signal: the worker ends the attempt as interrupted. */
  interrupt(reason: string): void;
}

let spawned = 0;

export function createHeadlessExecutor(options: HeadlessExecutorOptions): AgentStepExecutor {
  return { runStep: (request) => runHeadlessStep(options, request) };
}

async function runHeadlessStep(
  options: HeadlessExecutorOptions,
  request: AgentStepRequest,
): Promise<JsonValue> {
  const pi = runnablePi(options, request);
  const contract = stepContract(request);
  if (request.signal.aborted) throw request.signal.reason;
  const stateDir = options.stateDir;
  if (!stateDir) {
    throw new NodeFailure("piUnavailable", "Worker not started by a host: no state directory");
  }
  if (request.groupMember) return await runMemberStep(options, request, contract, pi, stateDir);
  const start = piStart(options, request, pi, stateDir, runSessionArgs(sessionFileOf(options)));
  const child = await acquireRunPi(start);
  let ended = false;
  try {
    const output = await driveStep(
      child,
      contract,
      request,
      secretsOf(options.env),
      [
        ...interruptedNote(options, contract),
        contract.message,
      ].join("\n"),
    );
    ended = true;
    return output;
  } catch (error) {
    ended = !(error instanceof PiKilled) && !request.signal.aborted && child.exit === null;
    throw interrupted(options, error);
  } finally {
    if (ended) keepRunPi(child, start);
    else stopStepPi(child);
  }
}

/** One agent group member: a Pi and a session of its own, stopped when the member ends. */
async function runMemberStep(
  options: HeadlessExecutorOptions,
  request: AgentStepRequest,
  contract: StepContract,
  pi: PiLaunch,
  stateDir: string,
): Promise<JsonValue> {
  const member = request.groupMember!;
  const session = memberSessionArgs(options.sessionFile, options.sessionsRoot, {
    nodeId: member.nodeId,
    visit: options.visit,
    memberId: member.memberId,
  });
  const child: StepPi = await startStepPi(piStart(options, request, pi, stateDir, session.args));
  // A fork is a file Pi created itself: narrowed now that Pi runs.
  restrictSessionFiles(session.dir);
  try {
    const note = session.origin === "continued" ? interruptedNote(options, contract) : [];
    return await driveStep(
      child,
      contract,
      request,
      secretsOf(options.env),
      [
        ...note,
        contract.message,
      ].join("\n"),
    );
  } catch (error) {
    throw interrupted(options, error);
  } finally {
    stopStepPi(child);
    restrictSessionFiles(session.dir);
  }
}

function runnablePi(options: HeadlessExecutorOptions, request: AgentStepRequest): PiLaunch {
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
  return options.pi;
}

function stepContract(request: AgentStepRequest): StepContract {
  return buildStepContract({
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
}

function sessionFileOf(options: HeadlessExecutorOptions): string {
  return options.sessionFile ?? join(options.sessionsRoot, "run.jsonl");
}

function piStart(
  options: HeadlessExecutorOptions,
  request: AgentStepRequest,
  pi: PiLaunch,
  stateDir: string,
  session: readonly string[],
): StepPiStart {
  const context: PiContext = pi.context ?? "none";
  return {
    command: pi.command,
    args: headlessPiArgs({
      session,
      context,
      bridgeFile: ensureBridgeFile(stateDir),
      recorded: pi.args,
      ...(request.tools ? { tools: request.tools } : {}),
    }),
    cwd: options.projectPath,
    env: options.env,
    tail: {
      dir: join(stateDir, "workers"),
      stem: `${options.logStem}-pi${++spawned}`,
      maxBytes: PI_TAIL_BYTES,
    },
    processGroups: options.processGroups,
  };
}

/**
 * The note before a step presented again after its attempt was interrupted (a worker or host
 * crash, Pi killed, a pause): the cut-off turn is still in the conversation as Pi left it.
 */
function interruptedNote(options: HeadlessExecutorOptions, contract: StepContract): string[] {
  if (options.interruptedAttempt === null) return [];
  return [
    `Note: the previous attempt at workflow step "${contract.step}" (attempt ` +
    `${JSON.stringify(options.interruptedAttempt)}) was interrupted before its output was ` +
    "accepted (the workflow's worker, host or Pi stopped, or the run was paused). Whatever that " +
    "attempt did is above in this conversation as it was cut off; a tool call it started may or " +
    "may not have completed, so check before you rely on it. Do the step now and submit it " +
    "with the new attempt id below.",
    "",
  ];
}

/** Pi killed by a signal: the worker interrupts the attempt; other errors pass through. */
function interrupted(options: HeadlessExecutorOptions, error: unknown): unknown {
  if (error instanceof PiKilled) options.interrupt(error.message);
  return error;
}
