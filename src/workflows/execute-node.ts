/**
 * `executeNode` runs one node callback for one attempt and reports its outcome. It never
 * throws: every failure becomes a `NodeResult` with a stable code. The abort signal ends the
 * attempt promptly even when the callback ignores it (the worker process is then the
 * supervisor's to kill).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionVerdict } from "../protocol/submissions.ts";
import { type Clock, systemClock } from "../base/clock.ts";
import { acceptForKind } from "./accept-output.ts";
import type { AcceptResult, AgentStepExecutor } from "./agent-executor.ts";
import type { CompiledNode, CompiledWorkflow } from "./compile.ts";
import { errorMessage, NodeFailure } from "./errors.ts";
import type { EffectPort } from "./managed-effect.ts";
import { scopeContext, viewFacts } from "./facts-view.ts";
import { nodeRunState } from "./node-run-state.ts";
import { agentStepText, runNodeKind } from "./node-kinds.ts";
import type { NodeResult } from "./node-result.ts";
import { toJson } from "./json-value.ts";
import type { OutputSink, ProcessGroupHooks } from "./shell-runner.ts";
import type { NodeContext } from "./types.ts";
import { createUpdatePublisher } from "./updates.ts";

export interface ExecuteContext {
  facts: RunFacts;
  attemptId: string;
  signal: AbortSignal;
  /** Receives updates that passed the type/key/data limits and the rate limit. */
  publishUpdate(update: { type: string; key: string; data: JsonValue }): void;
  agent: AgentStepExecutor;
  /** Runs agent group members when `agent` cannot (an interactive run's worker). */
  groupAgent?: AgentStepExecutor;
  /**
   * Reserves and settles managed effects (`effect.reserve` / `effect.settle`). Without it,
   * nodes that declare an `effect` run unmanaged.
   */
  effects?: EffectPort;
  /**
   * Attaches each shell command's process group to a supervisor that outlives this process
   * (the worker registers it with the host), before the command is awaited.
   */
  processGroups?: ProcessGroupHooks;
  /** Receives a shell node's output as it comes (the worker writes the step's output files). */
  output?: OutputSink;
  /** Drives the update rate limit; default the system clock. */
  clock?: Clock;
  /** Receives a model step's whole usage so far (see AgentStepRequest.reportUsage). */
  reportUsage?(usage: StepUsage, durable: boolean): void;
  /** Counts each verdict on a model step's submission (AgentStepRequest.reportSubmission). */
  reportSubmission?(verdict: SubmissionVerdict): Promise<void>;
}

export async function executeNode(
  wf: CompiledWorkflow,
  nodeId: string,
  exec: ExecuteContext,
): Promise<NodeResult> {
  const node = wf.nodes.get(nodeId);
  if (!node) return failed("unknownNode", `Unknown node "${nodeId}" in workflow "${wf.name}"`);
  let detach = () => {};
  try {
    if (exec.signal.aborted) throw exec.signal.reason;
    const ctx = nodeContext(wf, node, exec.facts, exec.attemptId, exec.signal);
    const publish = createUpdatePublisher(exec.clock ?? systemClock, exec.publishUpdate);
    const aborted = new Promise<never>((_, reject) => {
      const onAbort = () => reject(exec.signal.reason);
      exec.signal.addEventListener("abort", onAbort, { once: true });
      detach = () => exec.signal.removeEventListener("abort", onAbort);
    });
    const work = runNodeKind(node, ctx, {
      publish,
      agent: exec.agent,
      groupAgent: exec.groupAgent,
      runId: exec.facts.runId,
      workflowName: wf.name,
      accept: (raw) => acceptOutput(wf, node, ctx, raw),
      effects: exec.effects,
      processGroups: exec.processGroups,
      ...(exec.output ? { output: exec.output } : {}),
      ...(exec.reportUsage ? { reportUsage: exec.reportUsage } : {}),
      ...(exec.reportSubmission ? { reportSubmission: exec.reportSubmission } : {}),
    });
    const result = await Promise.race([work, aborted]);
    if (result.outcome !== "ok") return result;
    return { ...result, output: await applyExitValidation(node, result.output) };
  } catch (error) {
    return classify(error, exec.signal);
  } finally {
    detach();
  }
}

/**
 * Checks one agent submission for a node outside `executeNode`: the supervised child that
 * validates an interactive submission calls this. Same rules as during execution.
 */
export async function acceptAgentSubmission(
  wf: CompiledWorkflow,
  nodeId: string,
  exec: { facts: RunFacts; attemptId: string; signal?: AbortSignal },
  raw: unknown,
): Promise<AcceptResult> {
  const node = wf.nodes.get(nodeId);
  if (!node) return { ok: false, message: `Unknown node "${nodeId}"` };
  try {
    const ctx = nodeContext(
      wf,
      node,
      exec.facts,
      exec.attemptId,
      exec.signal ?? new AbortController().signal,
    );
    return await acceptOutput(wf, node, ctx, raw);
  } catch (error) {
    return { ok: false, message: errorMessage(error) };
  }
}

/**
 * The prompt of a model step without running it: an interactive worker proposes it as an
 * interaction request and exits instead of waiting for the model. Throws `NodeFailure`.
 */
export async function prepareAgentStep(
  wf: CompiledWorkflow,
  nodeId: string,
  exec: { facts: RunFacts; attemptId: string },
): Promise<{
  kind: "agent" | "assistantMessage";
  prompt: string;
  expectedOutput: string | null;
  statusDetail: string | null;
}> {
  const node = wf.nodes.get(nodeId);
  if (!node) throw new NodeFailure("unknownNode", `Unknown node "${nodeId}"`);
  const ctx = nodeContext(wf, node, exec.facts, exec.attemptId, new AbortController().signal);
  return { ...(await agentStepText(node, ctx)), statusDetail: node.node.statusDetail ?? null };
}

function nodeContext(
  wf: CompiledWorkflow,
  node: CompiledNode,
  facts: RunFacts,
  attemptId: string,
  signal: AbortSignal,
): NodeContext {
  const view = viewFacts(wf, facts);
  const base = scopeContext(wf, view, facts, node.scope);
  return {
    ...base,
    signal,
    state: nodeRunState(wf, view, facts, base, node.id, attemptId),
  };
}

async function acceptOutput(
  _wf: CompiledWorkflow,
  node: CompiledNode,
  ctx: NodeContext,
  raw: unknown,
): Promise<AcceptResult> {
  try {
    const output = await acceptForKind(node, ctx, raw);
    return { ok: true, output: await applyExitValidation(node, output) };
  } catch (error) {
    return { ok: false, message: errorMessage(error) };
  }
}

/** Runs the `validate` of every include exit this node leaves through, innermost first. */
async function applyExitValidation(node: CompiledNode, output: JsonValue): Promise<JsonValue> {
  let value = output;
  for (let scope = node.scope; scope.parent; scope = scope.parent) {
    for (const [name, exitNode] of scope.exits) {
      if (exitNode !== node.id) continue;
      const validate = scope.definition.exits?.[name]?.validate;
      if (!validate) continue;
      let replaced: unknown;
      try {
        // May be async, as in 0.12.
        replaced = await validate(value);
      } catch (error) {
        throw new NodeFailure(
          "exitValidationFailed",
          `Exit "${name}" of included workflow "${scope.definition.name}" rejected the output: ${
            errorMessage(error)
          }`,
        );
      }
      if (replaced !== undefined) value = toJson(replaced, `output of exit "${name}"`);
    }
  }
  return value;
}

function classify(error: unknown, signal: AbortSignal): NodeResult {
  if (signal.aborted && error === signal.reason) {
    const timedOut = (signal.reason as { name?: string } | undefined)?.name === "TimeoutError";
    return timedOut
      ? {
        outcome: "timed_out",
        error: { code: "nodeTimedOut", message: "The node reached its deadline" },
      }
      : {
        outcome: "cancelled",
        error: { code: "nodeCancelled", message: "The node was cancelled" },
      };
  }
  if (error instanceof NodeFailure) {
    if (error.code === "commandTimedOut") {
      return { outcome: "timed_out", error: { code: error.code, message: error.message } };
    }
    return failed(error.code, error.message);
  }
  return failed("nodeFailed", errorMessage(error) || "The node failed");
}

function failed(code: string, message: string): NodeResult {
  return { outcome: "failed", error: { code, message: message.slice(0, 8000) } };
}
