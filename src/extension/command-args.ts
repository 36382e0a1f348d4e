/**
 * Parses the arguments of `/workflow` (what 0.12 users type) into one command, or a
 * `CommandArgsError` with one actionable line. Parsing only.
 *
 *   /workflow                              list discovered workflows
 *   /workflow <name|path> [task…]          start, input {"task": "<words>"} ({} without words)
 *   /workflow <name|path> --input-json J   start with any JSON input
 *   /workflow status|pause|resume|cancel [runId]
 *   /workflow resume [runId] --accept-source
 *   /workflow rerun|retry ...                 rerun-args.ts
 *   /workflow answer [runId] <json|text>
 *   /workflow schedule <action> ...          schedule-args.ts
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parsedJsonProblem, parseJsonText } from "../protocol/json-depth.ts";

export type ControlVerb = "status" | "pause" | "resume" | "cancel";

export type WorkflowCommand =
  | { kind: "list" }
  | { kind: "start"; workflow: string; input: JsonValue }
  | { kind: "control"; verb: ControlVerb; runId: string | null; acceptSource?: true }
  | { kind: "rerun"; verb: "rerun" | "retry"; args: string }
  | { kind: "answer"; runId: string | null; answer: JsonValue; text: string }
  | { kind: "schedule"; args: string };

export class CommandArgsError extends Error {
  override name = "CommandArgsError";
}

const CONTROL_VERBS: readonly string[] = ["status", "pause", "resume", "cancel"];
export const RUN_ID = /^run-[\x21-\x7e]{1,196}$/;
export const USAGE =
  "Usage: /workflow [<name|path> [task…] | <name|path> --input-json <json> | status|pause|resume|cancel [runId] | resume [runId] --accept-source | rerun [runId] [--from <node>] … | retry [runId] | answer [runId] <json|text> | schedule add|apply|list|show|pause|resume|remove …]";

export function parseWorkflowArgs(raw: string): WorkflowCommand {
  const text = raw.trim();
  if (text === "" || text === "list") return { kind: "list" };
  const [head] = text.split(/\s+/, 1);
  const rest = text.slice(head.length).trim();
  if (head === "help" || head === "--help") throw new CommandArgsError(USAGE);
  if (CONTROL_VERBS.includes(head)) {
    let words = rest === "" ? [] : rest.split(/\s+/);
    const acceptSource = head === "resume" && words.includes("--accept-source");
    if (acceptSource) words = words.filter((word) => word !== "--accept-source");
    const option = words.find((word) => word.startsWith("--"));
    if (option !== undefined) {
      throw new CommandArgsError(
        `Unknown option ${option.slice(0, 40)} for /workflow ${head}${
          head === "resume" ? " (it takes --accept-source)" : ""
        }`,
      );
    }
    if (words.length > 1) {
      throw new CommandArgsError(`Too many arguments for /workflow ${head}: give at most a run id`);
    }
    const runId = words[0] ?? null;
    if (runId !== null && !RUN_ID.test(runId)) {
      throw new CommandArgsError(`Not a run id: ${runId.slice(0, 60)} (run ids start with run-)`);
    }
    return {
      kind: "control",
      verb: head as ControlVerb,
      runId,
      ...(acceptSource ? { acceptSource: true as const } : {}),
    };
  }
  if (head === "rerun" || head === "retry") return { kind: "rerun", verb: head, args: rest };
  if (head === "answer") return parseAnswer(rest);
  if (head === "schedule") return { kind: "schedule", args: rest };
  return parseStart(head, rest);
}

function parseStart(workflow: string, rest: string): WorkflowCommand {
  const flag = rest.match(/(^|\s)--input-json(\s|$)/);
  if (!flag) {
    if (rest.startsWith("--")) {
      throw new CommandArgsError(`Unknown option ${rest.split(/\s+/, 1)[0]}: ${USAGE}`);
    }
    return { kind: "start", workflow, input: rest === "" ? {} : { task: rest } };
  }
  if (flag.index! > 0) {
    throw new CommandArgsError(
      "Cannot combine --input-json with task text: pass one or the other",
    );
  }
  const json = rest.slice(flag[0].length).trim();
  if (json === "") throw new CommandArgsError("Missing JSON after --input-json");
  return { kind: "start", workflow, input: parseJson(json, "--input-json") };
}

function parseAnswer(rest: string): WorkflowCommand {
  if (rest === "") {
    throw new CommandArgsError("Missing answer: /workflow answer [runId] <json|text>");
  }
  const [first] = rest.split(/\s+/, 1);
  if (RUN_ID.test(first)) {
    const body = rest.slice(first.length).trim();
    if (body === "") throw new CommandArgsError(`Missing answer for ${first}`);
    return { kind: "answer", runId: first, answer: jsonOrText(body), text: body };
  }
  return { kind: "answer", runId: null, answer: jsonOrText(rest), text: rest };
}

/** JSON when the text parses as JSON, else the text itself as a string. */
function jsonOrText(text: string): JsonValue {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  // JSON too deep for the host, or with a number read as infinite (1e999), is refused, not sent
  // on as text the person did not mean.
  const problem = parsedJsonProblem(value);
  if (problem !== null) throw new CommandArgsError(`Invalid answer: ${problem}`);
  return value as JsonValue;
}

export function parseJson(text: string, what: string): JsonValue {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new CommandArgsError(`Invalid ${what}: ${(error as Error).message.split("\n")[0]}`);
  }
}
