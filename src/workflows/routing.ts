/**
 * Routing from a finished node: plain edges, switches on the output (`$.a.b`, `$output.a.b`)
 * and on the result record (`$result.outcome`, `$result.error.code`, `$result.durationMs`, and as
 * 0.12 read them `$result.error` (the message), `$result.error.message`, `$result.output.a.b`).
 * Failures route only through `$result.*` switches; `cancelled` never routes.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { CompiledWorkflow } from "./compile.ts";
import type { NodeResultRecord } from "./types.ts";

export type Route =
  | { kind: "next"; nodeId: string }
  /** No out-edge: the node ends the run (ok) or the failure stands (not ok). */
  | { kind: "end" }
  | { kind: "error"; code: "routingError"; message: string };

export function routeFrom(
  wf: CompiledWorkflow,
  nodeId: string,
  record: NodeResultRecord,
): Route {
  const edge = wf.edges.get(nodeId);
  if (record.outcome === "cancelled") return { kind: "end" };
  const failed = record.outcome !== "ok";
  if (!edge) return { kind: "end" };
  if (edge.kind === "plain") return failed ? { kind: "end" } : { kind: "next", nodeId: edge.to };
  const onResult = edge.on.startsWith("$result.");
  if (failed && !onResult) return { kind: "end" };
  const value = onResult
    ? readResult(record, edge.on.slice("$result.".length).split("."))
    : readPath(record.output ?? null, outputPath(edge.on));
  if (value === undefined || value === null || typeof value === "object") {
    if (failed) return { kind: "end" };
    return {
      kind: "error",
      code: "routingError",
      message: `Routing failed at "${nodeId}": ${edge.on} is ${
        value === undefined ? "missing" : "not a string, number or boolean"
      }`,
    };
  }
  const key = String(value);
  const target = Object.hasOwn(edge.cases, key) ? edge.cases[key] : undefined;
  if (target === undefined) {
    if (failed) return { kind: "end" };
    return {
      kind: "error",
      code: "routingError",
      message: `Routing failed at "${nodeId}": no case for ${edge.on} = ${
        JSON.stringify(key)
      } (cases: ${Object.keys(edge.cases).join(", ")})`,
    };
  }
  return { kind: "next", nodeId: target };
}

function outputPath(on: string): string[] {
  const rest = on.startsWith("$output") ? on.slice("$output".length) : on.slice(1);
  return rest.split(".").filter((p) => p.length > 0);
}

function readResult(record: NodeResultRecord, path: string[]): JsonValue | undefined {
  const { error } = record;
  // 0.12's `error` was the message string.
  if (path.length === 1 && path[0] === "error") return error?.message;
  return readPath({
    outcome: record.outcome,
    error: error ? { code: error.code, message: error.message } : null,
    durationMs: record.durationMs,
    output: record.output ?? null,
  }, path);
}

/** Dot-path lookup; array indexes are plain digits. `undefined` when a segment is missing. */
export function readPath(value: JsonValue, path: string[]): JsonValue | undefined {
  let cur: JsonValue | undefined = value;
  for (const seg of path) {
    if (cur === null || typeof cur !== "object") return undefined;
    if (Array.isArray(cur)) {
      if (!/^\d+$/.test(seg)) return undefined;
      cur = cur[Number(seg)];
    } else {
      cur = Object.hasOwn(cur, seg) ? cur[seg] : undefined;
    }
  }
  return cur;
}
