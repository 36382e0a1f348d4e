/**
 * The model-facing seam. The engine hands an executor one agent or assistant-message step and
 * an `accept` function; the executor talks to a model (the origin Pi session, or a headless
 * `pi --mode rpc` child), calls `accept` for every submission, re-prompts with the rejection
 * message until one is accepted, and resolves with the accepted output.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import type { SubmissionVerdict } from "../protocol/submissions.ts";
import { NodeFailure } from "./errors.ts";
import type { WorkflowUpdate } from "./types.ts";

export type AcceptResult = { ok: true; output: JsonValue } | { ok: false; message: string };

export interface AgentStepRequest {
  kind: "agent" | "assistantMessage";
  runId: string;
  workflowName: string;
  nodeId: string;
  attemptId: string;
  /** The node's prompt; the executor adds its own submission contract around it. */
  prompt: string;
  /** What the output should look like, for the contract text; null when free-form. */
  expectedOutput: string | null;
  statusDetail: string | null;
  /** A Pi tool allowlist for this step's session (agent group members); default Pi's own. */
  tools?: readonly string[];
  /**
   * Set for an agent group member: the group node and the member's id. Members run in parallel,
   * each in a conversation of its own (a headless Pi session per member).
   */
  groupMember?: { nodeId: string; memberId: string };
  signal: AbortSignal;
  publishUpdate(update: WorkflowUpdate): void;
  /** Normalizes and validates one submission. A rejection message is meant for the model. */
  accept(raw: unknown): Promise<AcceptResult>;
  /**
   * The step's whole usage so far, after each model call (worker/pi-usage.ts). `durable`: the
   * attempt should record it before its outcome (more work may follow for long).
   */
  reportUsage?(usage: StepUsage, durable: boolean): void;
  /**
   * Counts one verdict on a submission of this attempt; resolves once it is recorded, before
   * the model hears the verdict (a rejection is durable even if the worker dies next).
   */
  reportSubmission?(verdict: SubmissionVerdict): Promise<void>;
}

export interface AgentStepExecutor {
  /** Resolves with an output `accept` returned; rejects (NodeFailure preferred) on failure. */
  runStep(request: AgentStepRequest): Promise<JsonValue>;
}

/** An executor for processes that cannot reach a model: every step fails with `reason`. */
export function unavailableAgentExecutor(reason: string): AgentStepExecutor {
  return {
    runStep: (request) =>
      Promise.reject(
        new NodeFailure(
          "agentUnavailable",
          `Agent step "${request.nodeId}" cannot run: ${reason}`,
        ),
      ),
  };
}
