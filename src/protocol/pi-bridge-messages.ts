/**
 * Frames between a headless worker and the bridge extension inside its `pi --mode rpc` child,
 * over the child's fd 3 (NDJSON, `pi-workflows.pi-bridge.v1`). The bridge (src/worker/
 * pi-bridge.mjs) is plain JavaScript loaded by Pi and cannot import these schemas; the worker
 * validates every frame it reads with them and builds the frames it writes here.
 *
 *   worker -> bridge  hello {tool}                      the tool to register, first
 *   bridge -> worker  call {callId, toolCallId, params} one tool call of the model
 *   worker -> bridge  result {callId, ok, text, terminate}
 */
import * as v from "valibot";
import type { JsonValue } from "./canonical-json.ts";
import { strictObject } from "./fields.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";

export const PI_BRIDGE_SCHEMA = "pi-workflows.pi-bridge.v1";

const CallIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(200));

export const BridgeCallSchema = strictObject({
  schema: v.literal(PI_BRIDGE_SCHEMA),
  kind: v.literal("call"),
  callId: CallIdSchema,
  /** Pi's tool call id: the idempotency key of the call. */
  toolCallId: v.pipe(v.string(), v.maxLength(1000)),
  /** The tool arguments as Pi validated them against the registered parameters. */
  params: v.record(v.string(), JsonValueSchema),
});
export type BridgeCall = v.InferOutput<typeof BridgeCallSchema>;

export function parseBridgeCall(value: unknown): SchemaResult<BridgeCall> {
  return parseWith(BridgeCallSchema, value, "bridge");
}

/** What Pi's `registerTool` gets (a JSON Schema for the parameters). */
export interface BridgeTool {
  name: string;
  label: string;
  description: string;
  promptSnippet?: string;
  promptGuidelines?: string[];
  parameters: JsonValue;
}

export function bridgeHello(tool: BridgeTool): JsonValue {
  return { schema: PI_BRIDGE_SCHEMA, kind: "hello", tool: tool as unknown as JsonValue };
}

export function bridgeResult(
  callId: string,
  verdict: { ok: boolean; text: string; terminate?: boolean },
): JsonValue {
  return {
    schema: PI_BRIDGE_SCHEMA,
    kind: "result",
    callId,
    ok: verdict.ok,
    text: verdict.text,
    terminate: verdict.terminate === true,
  };
}
