/**
 * Scripted results of action and shell nodes, for the test kit (src/testing): with
 * `PI_WORKFLOWS_SCRIPTED_RESULTS` naming a JSON file `{ "<nodeId>": result }`, a scripted node
 * does not run; its result becomes its output. A list scripts successive visits of the node (the
 * last one repeats). Nodes not named in the file really run. Unset in production: one env read.
 */
import { readFileSync } from "node:fs";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunFacts } from "../protocol/run-facts.ts";

export const SCRIPTED_RESULTS_ENV = "PI_WORKFLOWS_SCRIPTED_RESULTS";

/** Node kinds a script may replace: the ones that act on the world. */
const SCRIPTABLE_KINDS: ReadonlySet<string> = new Set(["action", "shell"]);

let scripted: Map<string, JsonValue> | undefined;

/** The scripted output of this visit of `nodeId`, or undefined when the node really runs. */
export function scriptedResult(
  nodeId: string,
  nodeKind: string,
  facts: RunFacts,
): { output: JsonValue } | undefined {
  if (!SCRIPTABLE_KINDS.has(nodeKind)) return undefined;
  scripted ??= readScript(process.env[SCRIPTED_RESULTS_ENV]);
  if (!scripted.has(nodeId)) return undefined;
  const value = scripted.get(nodeId)!;
  if (!Array.isArray(value)) return { output: value };
  const visits = facts.attempts.filter((a) => a.nodeId === nodeId && a.state === "ok").length;
  return { output: value[Math.min(visits, value.length - 1)] ?? null };
}

function readScript(file: string | undefined): Map<string, JsonValue> {
  if (!file) return new Map();
  const parsed = JSON.parse(readFileSync(file, "utf8")) as Record<string, JsonValue>;
  return new Map(Object.entries(parsed));
}
