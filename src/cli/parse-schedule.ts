/**
 * `pi-workflows schedule add|apply|list|show|pause|resume|remove ...` on the command line, parsed
 * into one `ScheduleCommand` or a `UsageError` with one actionable line. The timing and policies
 * are checked here with the protocol's own checks, so a typo is named before a host is asked.
 */
import { refusedPiArgument } from "../protocol/pi-launch.ts";
import { ScheduleNameSchema } from "../protocol/schedule-operations.ts";
import {
  CATCH_UP_POLICIES,
  type CatchUpPolicy,
  cronProblem,
  OVERLAP_POLICIES,
  type OverlapPolicy,
  parseEvery,
  timeZoneProblem,
} from "../base/schedule-timing.ts";
import * as v from "valibot";
import { UsageError } from "./exit-codes.ts";
import { countOption, JSON_FLAG, parse, type Parsed } from "./parse-args.ts";
import {
  type EnvOption,
  envOptions,
  type InputSource,
  inputSource,
  modelArgs,
} from "./parse-start.ts";

export const SCHEDULE_ACTIONS = [
  "add",
  "apply",
  "list",
  "show",
  "pause",
  "resume",
  "remove",
] as const;
export type ScheduleAction = (typeof SCHEDULE_ACTIONS)[number];

export type ScheduleCommand =
  | {
    kind: "schedule";
    action: "add";
    name: string;
    workflow: string;
    cron: string | null;
    every: string | null;
    timeZone: string | null;
    overlap: OverlapPolicy | null;
    catchUp: CatchUpPolicy | null;
    input: InputSource;
    env: EnvOption[];
    cwd: string | null;
    replace: boolean;
    piArgs: string[];
    json: boolean;
  }
  | {
    kind: "schedule";
    action: "apply";
    workflow: string;
    env: EnvOption[];
    cwd: string | null;
    piArgs: string[];
    json: boolean;
  }
  | { kind: "schedule"; action: "list"; json: boolean }
  | { kind: "schedule"; action: "show"; name: string; firings: number | null; json: boolean }
  | { kind: "schedule"; action: "pause" | "resume" | "remove"; name: string; json: boolean };

const MODEL_OPTIONS = {
  provider: { type: "string" },
  model: { type: "string" },
  thinking: { type: "string" },
  env: { type: "string", multiple: true },
  cwd: { type: "string" },
} as const;

/** Returns the command, or null for `schedule --help` / `schedule <action> --help`. */
export function parseScheduleCommand(argv: readonly string[]): ScheduleCommand | null {
  const [action, ...rest] = argv;
  if (action === undefined || action === "--help" || action === "-h") return null;
  if (!(SCHEDULE_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(
      `Unknown schedule action '${action.slice(0, 40)}': use one of ${
        SCHEDULE_ACTIONS.join(", ")
      } (pi-workflows schedule --help)`,
    );
  }
  const command = `schedule ${action}`;
  // Everything after the first `--` belongs to Pi (add, apply).
  const split = rest.indexOf("--");
  const args = split === -1 ? rest : rest.slice(0, split);
  const passthrough = split === -1 ? [] : rest.slice(split + 1);
  if (passthrough.length > 0 && action !== "add" && action !== "apply") {
    throw new UsageError(`'${command}' takes no Pi arguments: run 'pi-workflows schedule --help'`);
  }
  const refused = refusedPiArgument(passthrough);
  if (refused !== null) throw new UsageError(refused);
  switch (action as ScheduleAction) {
    case "add": {
      const parsed = parse(
        command,
        args,
        {
          ...JSON_FLAG,
          ...MODEL_OPTIONS,
          cron: { type: "string" },
          every: { type: "string" },
          tz: { type: "string" },
          overlap: { type: "string" },
          "catch-up": { type: "string" },
          "input-json": { type: "string" },
          "input-file": { type: "string" },
          replace: { type: "boolean" },
        },
        2,
        2,
      );
      if (parsed.help) return null;
      const [name, workflow] = parsed.positionals as [string, string];
      const timing = timingOptions(parsed);
      return {
        kind: "schedule",
        action: "add",
        name: scheduleName(name),
        workflow: workflowArg(workflow),
        ...timing,
        overlap: policy(parsed, "overlap", OVERLAP_POLICIES),
        catchUp: policy(parsed, "catch-up", CATCH_UP_POLICIES),
        input: inputSource(parsed, []),
        env: envOptions(parsed.values.env),
        cwd: cwdOption(parsed),
        replace: parsed.values.replace === true,
        piArgs: [...modelArgs(parsed), ...passthrough],
        json: parsed.values.json === true,
      };
    }
    case "apply": {
      const parsed = parse(command, args, { ...JSON_FLAG, ...MODEL_OPTIONS }, 1, 1);
      if (parsed.help) return null;
      return {
        kind: "schedule",
        action: "apply",
        workflow: workflowArg(parsed.positionals[0]!),
        env: envOptions(parsed.values.env),
        cwd: cwdOption(parsed),
        piArgs: [...modelArgs(parsed), ...passthrough],
        json: parsed.values.json === true,
      };
    }
    case "list": {
      const parsed = parse(command, args, JSON_FLAG, 0, 0);
      if (parsed.help) return null;
      return { kind: "schedule", action: "list", json: parsed.values.json === true };
    }
    case "show": {
      const parsed = parse(command, args, { ...JSON_FLAG, firings: { type: "string" } }, 1, 1);
      if (parsed.help) return null;
      const firings = parsed.values.firings;
      return {
        kind: "schedule",
        action: "show",
        name: scheduleName(parsed.positionals[0]!),
        firings: typeof firings === "string" ? countOption("--firings", firings, 100, "") : null,
        json: parsed.values.json === true,
      };
    }
    default: {
      const parsed = parse(command, args, JSON_FLAG, 1, 1);
      if (parsed.help) return null;
      return {
        kind: "schedule",
        action: action as "pause" | "resume" | "remove",
        name: scheduleName(parsed.positionals[0]!),
        json: parsed.values.json === true,
      };
    }
  }
}

function scheduleName(name: string): string {
  const result = v.safeParse(ScheduleNameSchema, name);
  if (!result.success) {
    throw new UsageError(`${result.issues[0].message}: got '${name.slice(0, 80)}'`);
  }
  return name;
}

function workflowArg(workflow: string): string {
  if (workflow.trim() === "") throw new UsageError("Workflow reference is empty: name a workflow");
  return workflow;
}

function cwdOption(parsed: Parsed): string | null {
  const cwd = parsed.values.cwd;
  if (cwd === "") throw new UsageError("Option --cwd is empty: give a project directory");
  return typeof cwd === "string" ? cwd : null;
}

function timingOptions(parsed: Parsed) {
  const cron = parsed.values.cron;
  const every = parsed.values.every;
  const tz = parsed.values.tz;
  if (typeof cron !== "string" && typeof every !== "string") {
    throw new UsageError(
      'A schedule needs a timing: give --cron "<min> <hour> <day> <month> <weekday>" or --every <duration>',
    );
  }
  if (typeof cron === "string" && typeof every === "string") {
    throw new UsageError("Give either --cron or --every, not both");
  }
  if (typeof tz === "string") {
    if (typeof every === "string") {
      throw new UsageError("Option --tz applies only to --cron: an interval follows real time");
    }
    const problem = timeZoneProblem(tz);
    if (problem !== null) throw new UsageError(problem);
  }
  if (typeof cron === "string") {
    const problem = cronProblem(cron, typeof tz === "string" ? tz : "UTC");
    if (problem !== null) throw new UsageError(problem);
  }
  if (typeof every === "string") {
    const parsedEvery = parseEvery(every);
    if (!parsedEvery.ok) throw new UsageError(parsedEvery.error);
  }
  return {
    cron: typeof cron === "string" ? cron : null,
    every: typeof every === "string" ? every : null,
    timeZone: typeof tz === "string" ? tz : null,
  };
}

function policy<T extends string>(parsed: Parsed, option: string, allowed: readonly T[]): T | null {
  const value = parsed.values[option];
  if (typeof value !== "string") return null;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(
      `Invalid --${option} '${value.slice(0, 40)}': use one of ${allowed.join(", ")}`,
    );
  }
  return value as T;
}
