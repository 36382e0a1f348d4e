/**
 * The worker's view of the workflow layer: check the saved source identity without loading,
 * load and compare the mounted map, then decide and execute steps. Agent and decision steps of a
 * headless run run in a supervised `pi --mode rpc` child (headless-executor.ts). In an
 * interactive run a model step (agent, decision, assistant message) is not executed here:
 * `prepareModelStep` renders its step contract, which the worker proposes as
 * `interaction.requested` before it exits.
 */
import { epochLogStem } from "../base/step-output-files.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionVerdict } from "../protocol/submissions.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import type { WorkerLaunch } from "../protocol/worker-launch.ts";
import type { WaitingPresentation } from "../protocol/waiting-presentation.ts";
import { type AgentStepExecutor, unavailableAgentExecutor } from "../workflows/agent-executor.ts";
import {
  type CompiledWorkflow,
  decideNext,
  type EffectPort,
  executeNode,
  type NextStep,
  type NodeResult,
  type OutputSink,
  type ProcessGroupHooks,
  resolveNodeTimeout,
  trackAppendOnlyFacts,
  waitingPresentation,
} from "../workflows/engine.ts";

import {
  compareSourceIdentity,
  describeSourceChanges,
  verifySourceIdentity,
} from "../workflows/sources/identity.ts";
import { loadWorkflow } from "../workflows/sources/load-workflow.ts";
import { createHeadlessExecutor } from "./headless-executor.ts";
import { runSessionsRoot } from "../base/pi-session-files.ts";
import { discoverPi } from "./pi-command.ts";
import type { PiLaunch } from "../protocol/pi-launch.ts";
import { buildStepContract, type StepContract } from "../workflows/step-contract.ts";
import { acceptAgentSubmission, prepareAgentStep } from "../workflows/execute-node.ts";
import type { AcceptResult } from "../workflows/agent-executor.ts";
import { publishFullAuthoringApi } from "../controllers/authoring-api.ts";
import { scriptedResult } from "./scripted-results.ts";

export type NodeStep = Extract<NextStep, { kind: "startNode" }>;

export interface SourceProblem {
  reason: "workflowSourceChanged";
  detail: string;
}

export interface ExecuteRequest {
  facts: RunFacts;
  attemptId: string;
  signal: AbortSignal;
  publishUpdate(update: { type: string; key: string; data: JsonValue }): void;
  /** Managed effects of action and shell nodes, reserved and settled through the host. */
  effects: EffectPort;
  /** A model step's whole usage so far; `durable`: record it before the outcome. */
  reportUsage?(usage: StepUsage, durable: boolean): void;
  /** Counts one verdict on a model step's submission; resolves once it is recorded. */
  reportSubmission?(verdict: SubmissionVerdict): Promise<void>;
  /** Shell command process groups, registered with the host while they run. */
  processGroups: ProcessGroupHooks;
  /** Receives a shell node's output as it comes (the step's output files). */
  output?: OutputSink;
  /** The node's 1-based visit. */
  visit: number;
  /** The node's previous attempt, when it was interrupted (the step is presented again). */
  interruptedAttempt: string | null;
  /** Ends the attempt as interrupted (a headless Pi killed by a signal): the worker stops. */
  interrupt(reason: string): void;
}

/** Node kinds that talk to a model: in an interactive run they wait for the origin Pi session. */
export const MODEL_STEP_KINDS: ReadonlySet<string> = new Set([
  "agent",
  "decision",
  "assistantMessage",
]);

export interface RunWorkflow {
  /** How model steps run (from the launch envelope). */
  readonly executionMode: "interactive" | "headless";
  /**
   * The worker's own copy of the committed facts. The worker only appends the attempts the host
   * accepted, so views of it are extended step by step instead of rebuilt.
   */
  ownFacts(committed: RunFacts): RunFacts;
  decideNext(facts: RunFacts): NextStep;
  /** Milliseconds or null; a failing timeout callback surfaces as a thrown NodeFailure. */
  resolveTimeout(nodeId: string, facts: RunFacts, attemptId: string): Promise<number | null>;
  execute(nodeId: string, request: ExecuteRequest): Promise<NodeResult>;
  /**
   * The step contract of a model step (prompt rendered, contract block added). Throws what the
   * prompt callback threw, or a `NodeFailure`.
   */
  prepareModelStep(
    nodeId: string,
    facts: RunFacts,
    attemptId: string,
    deadlineAt: number | null,
  ): Promise<StepContract>;
  /**
   * The same loaded workflow for a later epoch or validation of the same run (a prepared
   * process): what depends on the launch (the epoch, credentials) comes from `launch`.
   */
  forLaunch(launch: WorkerLaunch): RunWorkflow;
  /**
   * What presents a checkpoint the run now waits at: the root's `presentationPrompt` (see
   * `waitingPresentation`), or null when it declares none.
   */
  waitingPresentation(
    nodeId: string,
    facts: RunFacts,
    request: JsonValue,
  ): WaitingPresentation | null;
  /** Tolerant JSON parsing and the node's rules for one submission (the validation child). */
  acceptSubmission(
    nodeId: string,
    facts: RunFacts,
    attemptId: string,
    raw: unknown,
  ): Promise<AcceptResult>;
}

const interactiveUnavailable = unavailableAgentExecutor(
  "a model step of an interactive run waits for its origin Pi session, not in a worker",
);

/** Hashes every saved source file (or built-in revision); loads nothing. */
export function checkSourceBeforeLoad(launch: WorkerLaunch): SourceProblem | null {
  const check = verifySourceIdentity(launch.workflowSource);
  if (check.ok) return null;
  return { reason: "workflowSourceChanged", detail: describeSourceChanges(check.changed) };
}

export type LoadOutcome =
  | { ok: true; workflow: RunWorkflow }
  | { ok: false; problem: SourceProblem };

/**
 * Loads the run's workflow from its saved root and compares the complete mounted map and the
 * definition digest with the launch envelope. A load error of unchanged bytes is thrown (it is
 * not a source change).
 */
export async function loadRunWorkflow(launch: WorkerLaunch): Promise<LoadOutcome> {
  const root = launch.workflowSource.root;
  const ref = root.kind === "builtin" ? `builtin:${root.id}` : root.path;
  // The saved hashes were compared before this load (checkSourceBeforeLoad) and the digest is
  // compared below: the definition's shape was checked in full when the run was resolved.
  publishFullAuthoringApi({ checkedSource: true });
  const loaded = await loadWorkflow(ref, { cwd: launch.projectPath });
  // Root and complete mounted map, as the loader actually read them.
  const same = compareSourceIdentity(launch.workflowSource, loaded.identity.workflowSource);
  if (!same.ok) {
    return {
      ok: false,
      problem: { reason: "workflowSourceChanged", detail: describeSourceChanges(same.changed) },
    };
  }
  if (loaded.identity.definitionDigest !== launch.definitionDigest) {
    return {
      ok: false,
      problem: {
        reason: "workflowSourceChanged",
        detail: "Workflow source changed: the definition digest differs from the saved one",
      },
    };
  }
  return { ok: true, workflow: wrap(loaded.workflow, launch) };
}

function wrap(wf: CompiledWorkflow, launch: WorkerLaunch): RunWorkflow {
  const stateDir = process.env.PI_WORKFLOWS_STATE_DIR ?? null;
  const headless = (request: ExecuteRequest, pi: PiLaunch | null) =>
    createHeadlessExecutor({
      pi,
      sessionFile: launch.piSession ?? null,
      sessionsRoot: runSessionsRoot(launch.piSession ?? null, stateDir, launch.runId),
      projectPath: launch.projectPath,
      stateDir,
      logStem: epochLogStem(launch.workerEpoch),
      // Provider credentials reach the Pi child alone, never this process's environment.
      env: launch.credentials ? { ...process.env, ...launch.credentials } : process.env,
      processGroups: request.processGroups,
      visit: request.visit,
      interruptedAttempt: request.interruptedAttempt,
      interrupt: request.interrupt,
    });
  // Built on a model step's first call only: a compute node never pays for the executor (nor
  // for the environment copy a run with provider credentials makes).
  const agentFor = (request: ExecuteRequest): AgentStepExecutor =>
    launch.executionMode === "headless"
      ? lazyExecutor(() => headless(request, launch.pi ?? null))
      : interactiveUnavailable;
  // An interactive run's agent group still runs headless Pi children: the Pi found now.
  const groupAgentFor = (request: ExecuteRequest): AgentStepExecutor | undefined =>
    launch.executionMode === "headless" ? undefined : lazyGroupExecutor(request, headless);
  return {
    executionMode: launch.executionMode,
    ownFacts: (committed) =>
      trackAppendOnlyFacts({ ...committed, attempts: [...committed.attempts] }),
    decideNext: (facts) => decideNext(wf, facts),
    resolveTimeout: (nodeId, facts, attemptId) =>
      resolveNodeTimeout(wf, nodeId, { facts, attemptId }),
    execute: (nodeId, request) => {
      const scripted = scriptedResult(nodeId, wf.nodes.get(nodeId)!.kind, request.facts);
      if (scripted) return Promise.resolve({ outcome: "ok", output: scripted.output });
      return executeNode(wf, nodeId, {
        ...request,
        agent: agentFor(request),
        groupAgent: groupAgentFor(request),
      });
    },
    prepareModelStep: async (nodeId, facts, attemptId, deadlineAt) => {
      const step = await prepareAgentStep(wf, nodeId, { facts, attemptId });
      const nodeKind = wf.nodes.get(nodeId)!.kind as "agent" | "decision" | "assistantMessage";
      return buildStepContract({
        ...step,
        nodeKind,
        runId: facts.runId,
        workflowName: wf.name,
        nodeId,
        attemptId,
        deadlineAt,
      });
    },
    forLaunch: (next) => wrap(wf, next),
    waitingPresentation: (nodeId, facts, request) =>
      wf.definition.presentationPrompt === undefined
        ? null
        : waitingPresentation(wf, facts, nodeId, request),
    acceptSubmission: (nodeId, facts, attemptId, raw) =>
      acceptAgentSubmission(wf, nodeId, { facts, attemptId }, raw),
  };
}

/** The executor `make` builds, built on the first step that needs it. */
function lazyExecutor(make: () => AgentStepExecutor): AgentStepExecutor {
  let executor: AgentStepExecutor | null = null;
  return { runStep: (request) => (executor ??= make()).runStep(request) };
}

/** Finds Pi on the first member's step (not for runs without groups); a miss fails the member. */
function lazyGroupExecutor(
  execute: ExecuteRequest,
  headless: (request: ExecuteRequest, pi: PiLaunch | null) => AgentStepExecutor,
): AgentStepExecutor {
  return lazyExecutor(() => {
    const found = discoverPi({
      env: process.env,
      stateDir: process.env.PI_WORKFLOWS_STATE_DIR ?? "",
      cwd: process.cwd(),
    });
    return found.ok
      ? headless(execute, { command: found.pi.command, args: [] })
      : unavailableAgentExecutor(`an agent group needs a headless Pi: ${found.message}`);
  });
}
