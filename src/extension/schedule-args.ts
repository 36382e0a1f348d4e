/**
 * Parses `/workflow schedule <action> ...` into one command, or a `CommandArgsError` with one
 * actionable line. Words may be quoted ("0 9 * * 1-5"). The timing and policies are checked with
 * the protocol's own checks, the same ones the CLI and the host use.
 *
 *   /workflow schedule add <name> <workflow> (--cron "<5 fields>" [--tz Zone] | --every 30m)
 *                      [--overlap skip|queue|cancel-previous] [--catch-up none|latest|all-bounded]
 *                      [--input-json <json>] [--replace]
 *   /workflow schedule apply <file>
 *   /workflow schedule list | show <name> | pause <name> | resume <name> | remove <name>
 */
import * as v from "valibot";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import { ScheduleNameSchema, timingProblem } from "../protocol/schedule-operations.ts";
import {
  CATCH_UP_POLICIES,
  type CatchUpPolicy,
  OVERLAP_POLICIES,
  type OverlapPolicy,
  parseEvery,
  timeZoneProblem,
} from "../base/schedule-timing.ts";
import { CommandArgsError } from "./command-args.ts";

export const SCHEDULE_USAGE =
  'Usage: /workflow schedule add <name> <workflow> (--cron "<min> <hour> <day> <month> <weekday>" [--tz Zone] | --every 30m) [--overlap skip|queue|cancel-previous] [--catch-up none|latest|all-bounded] [--input-json <json>] [--replace] | apply <file> | list | show|pause|resume|remove <name>';

export type ScheduleArgs =
  | {
    action: "add";
    name: string;
    workflow: string;
    cron?: string;
    every?: string;
    timeZone?: string;
    overlap?: OverlapPolicy;
    catchUp?: CatchUpPolicy;
    input?: JsonValue;
    replace: boolean;
  }
  | { action: "apply"; workflow: string }
  | { action: "list" }
  | { action: "show" | "pause" | "resume" | "remove"; name: string };

const VALUE_OPTIONS = ["--cron", "--every", "--tz", "--overlap", "--catch-up", "--input-json"];

export function parseScheduleArgs(raw: string): ScheduleArgs {
  const [action, ...words] = splitWords(raw);
  switch (action) {
    case undefined:
    case "help":
      throw new CommandArgsError(SCHEDULE_USAGE);
    case "list":
      positionals(words, 0, "list");
      return { action: "list" };
    case "apply":
      return { action: "apply", workflow: positionals(words, 1, "apply <file>")[0]! };
    case "show":
    case "pause":
    case "resume":
    case "remove":
      return { action, name: scheduleName(positionals(words, 1, `${action} <name>`)[0]!) };
    case "add":
      return parseAdd(words);
    default:
      throw new CommandArgsError(
        `Unknown schedule action ${action.slice(0, 40)}: ${SCHEDULE_USAGE}`,
      );
  }
}

function parseAdd(words: string[]): ScheduleArgs {
  const options: Record<string, string> = {};
  const rest: string[] = [];
  let replace = false;
  for (let i = 0; i < words.length; i++) {
    const word = words[i]!;
    if (word === "--replace") replace = true;
    else if (VALUE_OPTIONS.includes(word)) {
      const value = words[++i];
      if (value === undefined) throw new CommandArgsError(`Missing value after ${word}`);
      options[word] = value;
    } else if (word.startsWith("--")) {
      throw new CommandArgsError(`Unknown option ${word.slice(0, 40)}: ${SCHEDULE_USAGE}`);
    } else rest.push(word);
  }
  const [name, workflow] = positionals(rest, 2, "add <name> <workflow>");
  const timing = {
    ...(options["--cron"] !== undefined ? { cron: options["--cron"] } : {}),
    ...(options["--every"] !== undefined ? { every: options["--every"] } : {}),
    ...(options["--tz"] !== undefined ? { timeZone: options["--tz"] } : {}),
  };
  const zone = timing.timeZone === undefined ? null : timeZoneProblem(timing.timeZone);
  if (zone !== null) throw new CommandArgsError(zone);
  if (timing.every !== undefined) {
    const every = parseEvery(timing.every);
    if (!every.ok) throw new CommandArgsError(every.error);
  }
  const problem = timingProblem(timing);
  if (problem !== null) throw new CommandArgsError(problem);
  return {
    action: "add",
    name: scheduleName(name!),
    workflow: workflow!,
    ...timing,
    ...policy(options["--overlap"], "--overlap", OVERLAP_POLICIES, "overlap"),
    ...policy(options["--catch-up"], "--catch-up", CATCH_UP_POLICIES, "catchUp"),
    ...(options["--input-json"] !== undefined ? { input: json(options["--input-json"]) } : {}),
    replace,
  };
}

function policy<K extends string>(
  value: string | undefined,
  option: string,
  allowed: readonly string[],
  key: K,
): Partial<Record<K, never>> {
  if (value === undefined) return {};
  if (!allowed.includes(value)) {
    throw new CommandArgsError(
      `Invalid ${option} ${value.slice(0, 40)}: use one of ${allowed.join(", ")}`,
    );
  }
  return { [key]: value } as Partial<Record<K, never>>;
}

function json(text: string): JsonValue {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new CommandArgsError(`Invalid --input-json: ${(error as Error).message.split("\n")[0]}`);
  }
}

function scheduleName(name: string): string {
  const result = v.safeParse(ScheduleNameSchema, name);
  if (!result.success) throw new CommandArgsError(result.issues[0].message);
  return name;
}

function positionals(words: string[], count: number, usage: string): string[] {
  if (words.length !== count) {
    throw new CommandArgsError(`Usage: /workflow schedule ${usage}`);
  }
  return words;
}

/** Whitespace-separated words; "double" or 'single' quotes keep spaces inside one word. */
function splitWords(text: string): string[] {
  const words: string[] = [];
  const pattern = /"([^"]*)"|'([^']*)'|(\S+)/g;
  for (const match of text.matchAll(pattern)) words.push(match[1] ?? match[2] ?? match[3]!);
  return words;
}
