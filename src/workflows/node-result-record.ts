/**
 * A node's latest result record, as node callbacks (`results.<id>`) and `$result.*` switches
 * read it: this version's fields beside the ones 0.12 gave (`nodeId`, `nodeType`, the ISO times,
 * an `error` that reads as 0.12's string).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { NodeOutcome } from "../protocol/run-facts.ts";
import type { ResultError } from "./result-error.ts";

export type { ResultError };

/** The latest result record of a node, as node callbacks and `$result.*` switches see it. */
export interface NodeResultRecord {
  outcome: NodeOutcome | "waiting";
  output?: JsonValue;
  /** Its message when made into a string (`${error}`), as 0.12's string was. */
  error?: ResultError;
  durationMs: number | null;
  attemptId: string;
  /** The node's id in the callback's workflow (local inside an include), as 0.12 had it. */
  nodeId: string;
  /**
   * 0.12's name for the node's type: `agent` (agent, decision, agentGroup, assistantMessage),
   * `compute`, `action` (action, shell), `checkpoint` (checkpoint, humanDecision) or `notify`.
   */
  nodeType: NodeType012;
  /** When the attempt started and finished (ISO 8601); `finishedAt` is absent while it waits. */
  startedAt: string;
  finishedAt?: string;
}

export type NodeType012 = "agent" | "compute" | "action" | "checkpoint" | "notify";
