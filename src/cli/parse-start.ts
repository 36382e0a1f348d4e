/**
 * `start <workflow> [task text | --input-json | --input-file] [--env] [--cwd] [--wait]
 * [--provider --model --thinking] [--project-context] [--max-cost --max-tokens] [-- <pi args>]`:
 * parsing only, like parse-command.ts.
 */
import type { Budget } from "../protocol/budget.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import { isEnvName } from "../base/env-names.ts";
import { PI_THINKING_LEVELS, refusedPiArgument } from "../protocol/pi-launch.ts";
import { UsageError } from "./exit-codes.ts";
import { flag, type HelpCommand, JSON_FLAG, parse, type Parsed } from "./parse-args.ts";

/**
 * Where a run's input comes from. A value on the command line is visible to every local user
 * in `ps`; a file or stdin is not.
 */
export type InputSource =
  | { kind: "value"; value: JsonValue }
  | { kind: "file"; path: string }
  | { kind: "stdin" };

/** `--env NAME` (the value from this environment) or `--env NAME=value`. */
export interface EnvOption {
  name: string;
  value: string | null;
}

export interface StartCommand {
  kind: "start";
  workflow: string;
  input: InputSource;
  env: EnvOption[];
  cwd: string | null;
  wait: boolean;
  json: boolean;
  /**
   * The Pi arguments to record with a headless run: `--provider`, `--model`, `--thinking`
   * first, then everything after `--`.
   */
  piArgs: string[];
  /** The run's Pi loads context files and skills (`--project-context`). */
  projectContext: boolean;
  /** `--max-cost USD`, `--max-tokens N`: the run's budget (the workflow's wins when smaller). */
  budget: Budget;
}

export function parseStart(argv: readonly string[]): StartCommand | HelpCommand {
  // Everything after the first `--` belongs to Pi.
  const split = argv.indexOf("--");
  const rest = split === -1 ? argv : argv.slice(0, split);
  const passthrough = split === -1 ? [] : argv.slice(split + 1);
  const parsed = parse(
    "start",
    rest,
    {
      ...JSON_FLAG,
      "input-json": { type: "string" },
      "input-file": { type: "string" },
      env: { type: "string", multiple: true },
      cwd: { type: "string" },
      wait: { type: "boolean" },
      provider: { type: "string" },
      model: { type: "string" },
      thinking: { type: "string" },
      "project-context": { type: "boolean" },
      "max-cost": { type: "string" },
      "max-tokens": { type: "string" },
    },
    1,
    Infinity,
  );
  if (parsed.help) return { kind: "help", topic: "start" };
  const [workflow, ...words] = parsed.positionals;
  const refused = refusedPiArgument(passthrough);
  if (refused !== null) throw new UsageError(refused);
  if (workflow.trim() === "") throw new UsageError("Workflow reference is empty: name a workflow");
  const input = inputSource(parsed, words);
  const cwd = parsed.values.cwd;
  if (cwd === "") throw new UsageError("Option --cwd is empty: give a project directory");
  return {
    kind: "start",
    workflow,
    input,
    env: envOptions(parsed.values.env),
    cwd: typeof cwd === "string" ? cwd : null,
    wait: flag(parsed, "wait"),
    json: flag(parsed, "json"),
    piArgs: [...modelArgs(parsed), ...passthrough],
    projectContext: flag(parsed, "project-context"),
    budget: budgetOptions(parsed),
  };
}

/** `--max-cost USD` and `--max-tokens N`. */
function budgetOptions(parsed: Parsed): Budget {
  const cost = parsed.values["max-cost"];
  const tokens = parsed.values["max-tokens"];
  return {
    ...(typeof cost === "string" ? { maxCostUsd: costAmount("--max-cost", cost) } : {}),
    ...(typeof tokens === "string" ? { maxTokens: tokenCount("--max-tokens", tokens) } : {}),
  };
}

/** A non-negative amount of money (`1.50`, `$2`); a usage error names the option. */
export function costAmount(option: string, text: string): number {
  const value = /^\$?\d+(\.\d+)?$/.test(text.trim()) ? Number(text.trim().replace("$", "")) : NaN;
  if (!Number.isFinite(value)) {
    throw new UsageError(
      `Invalid ${option} '${text.slice(0, 40)}': give an amount in US dollars, e.g. 2.50`,
    );
  }
  return value;
}

/** A non-negative whole number of tokens (`200000`, `200k`, `1.5M`). */
export function tokenCount(option: string, text: string): number {
  const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  const value = match
    ? Math.round(Number(match[1]) * ({ k: 1e3, m: 1e6 }[match[2].toLowerCase()] ?? 1))
    : NaN;
  if (!Number.isSafeInteger(value)) {
    throw new UsageError(
      `Invalid ${option} '${
        text.slice(0, 40)
      }': give a whole number of tokens, e.g. 200000 or 200k`,
    );
  }
  return value;
}

export function inputSource(parsed: Parsed, words: string[]): InputSource {
  const json = parsed.values["input-json"];
  const file = parsed.values["input-file"];
  const given = [typeof json === "string", typeof file === "string", words.length > 0]
    .filter(Boolean).length;
  if (given > 1) {
    throw new UsageError(
      "Cannot combine --input-json, --input-file and task text: pass one of them",
    );
  }
  if (typeof file === "string") {
    if (file === "") throw new UsageError("Option --input-file is empty: give a file path");
    return { kind: "file", path: file };
  }
  if (typeof json === "string") {
    return json === "-" ? { kind: "stdin" } : { kind: "value", value: parseInputJson(json) };
  }
  const text = words.join(" ");
  return { kind: "value", value: text === "" ? {} : { task: text } };
}

export function envOptions(values: string | boolean | string[] | undefined): EnvOption[] {
  if (!Array.isArray(values)) return [];
  return values.map((spec) => {
    const equals = spec.indexOf("=");
    const name = equals === -1 ? spec : spec.slice(0, equals);
    if (!isEnvName(name)) {
      throw new UsageError(
        `Invalid --env '${spec.slice(0, 60)}': use NAME or NAME=value (NAME: letters, digits, _)`,
      );
    }
    return { name, value: equals === -1 ? null : spec.slice(equals + 1) };
  });
}

/** `--provider`, `--model`, `--thinking` as Pi takes them; the passthrough is checked too. */
export function modelArgs(parsed: Parsed): string[] {
  const args: string[] = [];
  for (const name of ["provider", "model", "thinking"] as const) {
    const value = parsed.values[name];
    if (typeof value !== "string") continue;
    if (value.trim() === "" || value.startsWith("-")) {
      throw new UsageError(`Option --${name} needs a value: run 'pi-workflows start --help'`);
    }
    if (name === "thinking" && !(PI_THINKING_LEVELS as readonly string[]).includes(value)) {
      throw new UsageError(
        `Invalid --thinking '${value.slice(0, 40)}': use one of ${PI_THINKING_LEVELS.join(", ")}`,
      );
    }
    args.push(`--${name}`, value);
  }
  if (parsed.values.provider !== undefined && parsed.values.model === undefined) {
    throw new UsageError("Option --provider needs --model too: name the model to use");
  }
  return args;
}

/** Parses `--input-json` text (also what `--input-file` and stdin hold). */
export function parseInputJson(text: string, source = "--input-json"): JsonValue {
  // JSON.parse says "Unexpected end of JSON input" for nothing at all: say what is missing.
  if (text.trim() === "") throw new UsageError(`Invalid ${source}: it is empty, give a JSON value`);
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new UsageError(`Invalid ${source}: ${(error as Error).message.split("\n")[0]}`);
  }
}
