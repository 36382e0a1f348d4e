/**
 * How a headless run starts its Pi: the command (an absolute path, resolved where the run was
 * started) and the model arguments recorded with the run (`--provider`, `--model`, `--thinking`
 * and the user's own `-- <pi args>`), so that every attempt, also after a resume or a host
 * restart, starts the same Pi the same way. It carries no credential: Pi finds provider keys in
 * its own agent directory or the environment, and `--api-key` is refused before a run is queued.
 */
import * as v from "valibot";
import { AbsolutePathSchema, strictObject } from "./fields.ts";

/** Pi versions before this lack `agent_settled` and the RPC dispositions headless relies on. */
export const MIN_PI_VERSION = "1.6.0";

/** Thinking levels Pi 1.6 accepts for `--thinking`. */
export const PI_THINKING_LEVELS = [
  "off",
  "minimal",
  "low",
  "medium",
  "high",
  "xhigh",
  "max",
] as const;

const PiArgSchema = v.pipe(
  v.string(),
  v.maxLength(4096),
  v.check((arg) => !arg.includes("\0"), "Invalid Pi argument: contains a NUL character"),
);

const SESSION_CHOSEN = "pi-workflows gives each headless run one Pi session of its own " +
  "(see `status`)";

/**
 * Pi options a run may not record: a credential, and options that would take the child out of
 * the RPC session the worker drives or hide the `workflow` tool.
 */
const REFUSED_PI_OPTIONS: Record<string, string> = {
  "--api-key": "provider keys stay in Pi's agent directory or the environment, never in a run's " +
    "recorded arguments",
  "--mode": "pi-workflows runs Pi in RPC mode",
  "--print": "pi-workflows runs Pi in RPC mode",
  "-p": "pi-workflows runs Pi in RPC mode",
  "--export": "pi-workflows runs Pi in RPC mode",
  "--list-models": "pi-workflows runs Pi in RPC mode",
  "--help": "pi-workflows runs Pi in RPC mode",
  "-h": "pi-workflows runs Pi in RPC mode",
  "--version": "pi-workflows runs Pi in RPC mode",
  "-v": "pi-workflows runs Pi in RPC mode",
  "--continue": SESSION_CHOSEN,
  "-c": SESSION_CHOSEN,
  "--resume": SESSION_CHOSEN,
  "-r": SESSION_CHOSEN,
  "--session": SESSION_CHOSEN,
  "--session-id": SESSION_CHOSEN,
  "--session-dir": SESSION_CHOSEN,
  "--fork": SESSION_CHOSEN,
  "--no-session": SESSION_CHOSEN,
  "--no-tools": "the step needs the workflow tool to submit",
  "-nt": "the step needs the workflow tool to submit",
};

/** Why `args` cannot be recorded (one line), or null when they can. */
export function refusedPiArgument(args: readonly string[]): string | null {
  for (const arg of args) {
    const option = arg.startsWith("-") ? arg.split("=", 1)[0] : null;
    if (option === null || !Object.hasOwn(REFUSED_PI_OPTIONS, option)) continue;
    return `Pi option ${option} is not allowed for workflow steps: ${REFUSED_PI_OPTIONS[option]}`;
  }
  return null;
}

const PiArgsSchema = v.pipe(
  v.array(PiArgSchema),
  v.maxLength(64),
  v.check(
    (args) => refusedPiArgument(args) === null,
    (issue) => refusedPiArgument(issue.input as string[]) ?? "Invalid Pi arguments",
  ),
);

/**
 * What a headless Pi child loads besides the step: `none` (the default: no context files, skills,
 * prompt templates, extensions or MCP servers of the user or the project) or `project` (Pi's
 * context files, such as the project's AGENTS.md, and its skills).
 */
export const PI_CONTEXTS = ["none", "project"] as const;
export type PiContext = (typeof PI_CONTEXTS)[number];

export const PiLaunchSchema = strictObject({
  command: AbsolutePathSchema,
  args: PiArgsSchema,
  /** Absent: `none`. */
  context: v.optional(v.picklist(PI_CONTEXTS)),
});
export type PiLaunch = v.InferOutput<typeof PiLaunchSchema>;
