/**
 * What one attempt of one node came to: the value executeNode returns and every node kind
 * produces (its own file so node-kinds.ts and execute-node.ts need not import each other).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";

export type NodeResult =
  | {
    outcome: "ok";
    output: JsonValue;
    /** Set by notify nodes: the worker proposes `notification.requested` with it. */
    notification?: { kind: "progress" | "final"; message: string };
  }
  | { outcome: "failed" | "timed_out" | "cancelled"; error: { code: string; message: string } }
  | {
    outcome: "waiting";
    kind: "checkpoint" | "humanDecision";
    request: JsonValue;
    /** A checkpoint's declared answer shape. */
    answerSchema?: JsonValue;
  };
