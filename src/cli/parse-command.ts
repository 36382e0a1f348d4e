/**
 * Turns the command line into one `CliCommand`, or a `UsageError` with one actionable line.
 * Parsing only: nothing here touches the host, the state or the file system.
 */
import type { PruneCommand } from "./prune-command.ts";
import { MAX_KEEP_DAYS } from "../protocol/retention-operations.ts";
import { MAX_PAGE_ITEMS } from "../protocol/page-limits.ts";
import { UsageError } from "./exit-codes.ts";
import {
  countOption,
  flag,
  HELP,
  type HelpCommand,
  JSON_FLAG,
  type Options,
  parse,
  runIdArg,
} from "./parse-args.ts";
import { COMMAND_HELP } from "./usage.ts";
import { type EffectResolveCommand, parseEffect } from "./parse-effect.ts";
import { type ControllerCommand, parseControllerCommand } from "./parse-controller.ts";
import { type CompletionCommand, parseCompletion } from "./completion-command.ts";
import { parseScheduleCommand, type ScheduleCommand } from "./parse-schedule.ts";
import { parseRerun, type RerunCommand } from "./parse-rerun.ts";
import { type LogsCommand, parseLogs } from "./parse-logs.ts";
import { parseView, type ViewCommand } from "./parse-view.ts";
import { costAmount, parseStart, type StartCommand, tokenCount } from "./parse-start.ts";

export type HostAction = "run" | "start" | "status" | "stop";

export type ControlAction = "pause" | "resume" | "cancel";

export type CliCommand =
  | HelpCommand
  | { kind: "version"; json: boolean }
  | { kind: "host"; action: HostAction; json: boolean }
  | StartCommand
  | RerunCommand
  | {
    kind: "status";
    runId: string;
    /** The last N attempts, or every one. */
    attempts: number | "all";
    /** Follow the run like `start --wait` (from its first event) instead. */
    wait: boolean;
    json: boolean;
  }
  | {
    kind: "list";
    /** Finished runs too, and no limit unless `limit` is given. */
    all: boolean;
    /** At most this many runs; null: 50, or every run with `all`. */
    limit: number | null;
    json: boolean;
  }
  | {
    kind: "control";
    action: ControlAction;
    runId: string;
    json: boolean;
    /** `resume --accept-source`: re-pin a run parked workflowSourceChanged to the file now. */
    acceptSource?: boolean;
  }
  | {
    kind: "budget";
    runId: string;
    /** `--raise USD` and `--raise-tokens N`: added to the run's limits (at least one). */
    raiseCostUsd: number | null;
    raiseTokens: number | null;
    json: boolean;
  }
  | {
    kind: "answer";
    runId: string;
    /** The waiting node, when named (else the run's waiting node). */
    nodeId: string | null;
    /** The answer as typed: JSON, plain text, or a choice name or label. */
    text: string | null;
    /** `--choice` and `--input name=value` (a human decision). */
    choice: string | null;
    inputs: { name: string; value: string }[];
    json: boolean;
  }
  | { kind: "doctor"; json: boolean }
  | PruneCommand
  | { kind: "schema"; name: string | null; out: string | null }
  | { kind: "workflows"; cwd: string | null; json: boolean }
  | { kind: "test"; files: string[] }
  | ViewCommand
  | EffectResolveCommand
  | ControllerCommand
  | { kind: "worker"; args: string[] }
  | CompletionCommand
  | ScheduleCommand
  | LogsCommand;

const HOST_ACTIONS: readonly HostAction[] = ["run", "start", "status", "stop"];
/** Attempts `status` shows without `--attempts`. */
export const DEFAULT_CLI_ATTEMPTS = 20;

export function parseCommand(argv: readonly string[]): CliCommand {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const topic = name === "help" ? rest[0] ?? null : null;
    if (topic !== null && !(topic in COMMAND_HELP)) throw unknownCommand(topic);
    return { kind: "help", topic };
  }
  if (name === "--version" || name === "-V") {
    if (rest.length > 1 || (rest.length === 1 && rest[0] !== "--json")) {
      throw new UsageError(`'--version' takes only --json: run 'pi-workflows --help'`);
    }
    return { kind: "version", json: rest.length === 1 };
  }
  if (name.startsWith("-")) {
    throw new UsageError(`Unknown option '${name}': run 'pi-workflows --help'`);
  }
  switch (name) {
    case "worker":
      // The worker owns its own arguments; the host builds them.
      return rest.includes("--help") ? { kind: "help", topic: "worker" } : {
        kind: "worker",
        args: rest,
      };
    case "host":
      return parseHost(rest);
    case "controller":
      return parseControllerCommand(rest) ?? { kind: "help", topic: "controller" };
    case "schedule":
      return parseScheduleCommand(rest) ?? { kind: "help", topic: "schedule" };
    case "start":
      return parseStart(rest);
    case "rerun":
    case "retry":
      return parseRerun(name, rest);
    case "logs":
      return parseLogs(rest);
    case "status": {
      const parsed = parse(
        "status",
        rest,
        {
          ...JSON_FLAG,
          attempts: { type: "string" },
          wait: { type: "boolean" },
        },
        1,
        1,
      );
      if (parsed.help) return { kind: "help", topic: "status" };
      const attempts = parsed.values.attempts;
      return {
        kind: "status",
        runId: runIdArg("status", parsed.positionals[0]),
        attempts: attempts === "all"
          ? "all"
          : typeof attempts === "string"
          ? countOption("--attempts", attempts, MAX_PAGE_ITEMS, "or 'all'")
          : DEFAULT_CLI_ATTEMPTS,
        wait: flag(parsed, "wait"),
        json: flag(parsed, "json"),
      };
    }
    case "list": {
      const parsed = parse(
        "list",
        rest,
        { ...JSON_FLAG, all: { type: "boolean" }, limit: { type: "string" } },
        0,
        0,
      );
      if (parsed.help) return { kind: "help", topic: "list" };
      const limit = parsed.values.limit;
      return {
        kind: "list",
        all: flag(parsed, "all"),
        limit: typeof limit === "string"
          ? countOption("--limit", limit, Number.MAX_SAFE_INTEGER, "")
          : null,
        json: flag(parsed, "json"),
      };
    }
    case "pause":
    case "resume":
    case "cancel": {
      const options = name === "resume"
        ? { ...JSON_FLAG, "accept-source": { type: "boolean" } } as const
        : JSON_FLAG;
      const parsed = parse(name, rest, options, 1, 1);
      if (parsed.help) return { kind: "help", topic: name };
      return {
        kind: "control",
        action: name,
        runId: runIdArg(name, parsed.positionals[0]),
        json: flag(parsed, "json"),
        ...(flag(parsed, "accept-source") ? { acceptSource: true } : {}),
      };
    }
    case "budget": {
      const parsed = parse(
        "budget",
        rest,
        { ...JSON_FLAG, raise: { type: "string" }, "raise-tokens": { type: "string" } },
        1,
        1,
      );
      if (parsed.help) return { kind: "help", topic: "budget" };
      const raise = parsed.values.raise;
      const raiseTokens = parsed.values["raise-tokens"];
      if (typeof raise !== "string" && typeof raiseTokens !== "string") {
        throw new UsageError(
          "Command 'budget' needs --raise USD or --raise-tokens N: run 'pi-workflows budget --help'",
        );
      }
      const cost = typeof raise === "string" ? costAmount("--raise", raise) : null;
      const tokens = typeof raiseTokens === "string"
        ? tokenCount("--raise-tokens", raiseTokens)
        : null;
      if (cost === 0 || tokens === 0) {
        throw new UsageError("Cannot raise a budget by nothing: give an amount above zero");
      }
      return {
        kind: "budget",
        runId: runIdArg("budget", parsed.positionals[0]),
        raiseCostUsd: cost,
        raiseTokens: tokens,
        json: flag(parsed, "json"),
      };
    }
    case "answer":
      return parseAnswer(rest);
    case "view":
      return parseView(rest);
    case "effect":
      return parseEffect(rest);
    case "prune": {
      const parsed = parse(
        "prune",
        rest,
        { ...JSON_FLAG, "keep-days": { type: "string" }, "dry-run": { type: "boolean" } },
        0,
        0,
      );
      if (parsed.help) return { kind: "help", topic: "prune" };
      const keep = parsed.values["keep-days"];
      return {
        kind: "prune",
        keepDays: typeof keep === "string" ? keepDaysOption(keep) : null,
        dryRun: flag(parsed, "dry-run"),
        json: flag(parsed, "json"),
      };
    }
    case "doctor": {
      const parsed = parse("doctor", rest, JSON_FLAG, 0, 0);
      if (parsed.help) return { kind: "help", topic: "doctor" };
      return { kind: "doctor", json: flag(parsed, "json") };
    }
    case "schema": {
      const parsed = parse("schema", rest, { ...HELP, out: { type: "string" } }, 0, 1);
      if (parsed.help) return { kind: "help", topic: "schema" };
      const out = parsed.values.out;
      return {
        kind: "schema",
        name: parsed.positionals[0] ?? null,
        out: typeof out === "string" ? out : null,
      };
    }
    case "completion":
    case "__complete":
      return parseCompletion(name, rest);
    case "test": {
      const parsed = parse("test", rest, HELP, 0, Infinity);
      if (parsed.help) return { kind: "help", topic: "test" };
      return { kind: "test", files: parsed.positionals };
    }
    case "workflows": {
      const parsed = parse("workflows", rest, { ...JSON_FLAG, cwd: { type: "string" } }, 0, 0);
      if (parsed.help) return { kind: "help", topic: "workflows" };
      const cwd = parsed.values.cwd;
      if (cwd === "") throw new UsageError("Option --cwd is empty: give a project directory");
      return {
        kind: "workflows",
        cwd: typeof cwd === "string" ? cwd : null,
        json: flag(parsed, "json"),
      };
    }
    default:
      throw unknownCommand(name);
  }
}

function parseHost(rest: readonly string[]): CliCommand {
  const parsed = parse("host", rest, JSON_FLAG, 0, 1);
  if (parsed.help) return { kind: "help", topic: "host" };
  const action = parsed.positionals[0];
  if (action === undefined) {
    throw new UsageError(
      "Missing host action: use one of run, start, status, stop (pi-workflows host --help)",
    );
  }
  if (!(HOST_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(
      `Unknown host action '${action}': use one of run, start, status, stop`,
    );
  }
  return { kind: "host", action: action as HostAction, json: flag(parsed, "json") };
}

/** `answer <runId> [<nodeId>] <json|text>`, or `answer <runId> [<nodeId>] --choice c [--input n=v]`. */
function parseAnswer(rest: readonly string[]): CliCommand {
  const options: Options = {
    ...JSON_FLAG,
    choice: { type: "string" },
    input: { type: "string", multiple: true },
  };
  const loose = parse("answer", rest, options, 0, Infinity);
  if (loose.help) return { kind: "help", topic: "answer" };
  const inputs = ((loose.values.input ?? []) as unknown as string[]).map(parseInputPair);
  const choice = typeof loose.values.choice === "string" ? loose.values.choice : null;
  if (choice !== null && choice.trim() === "") {
    throw new UsageError("Option --choice is empty: name one of the decision's choices");
  }
  // With --choice the answer is in the options: <runId> [<nodeId>]; else it is last (a choice
  // typed as a word may still take --input: `answer run-1 reject --input reason=...`).
  const flagged = choice !== null;
  const parsed = parse("answer", rest, options, flagged ? 1 : 2, flagged ? 2 : 3);
  const [runId, ...more] = parsed.positionals;
  const text = flagged ? null : more.pop()!;
  if (text !== null && text.trim() === "") {
    throw new UsageError("The answer is empty: give JSON, text or a choice");
  }
  const nodeId = more[0] ?? null;
  if (nodeId !== null && nodeId.trim() === "") throw new UsageError("The node id is empty");
  return {
    kind: "answer",
    runId: runIdArg("answer", runId),
    nodeId,
    text,
    choice,
    inputs,
    json: flag(parsed, "json"),
  };
}

function parseInputPair(pair: string): { name: string; value: string } {
  const at = pair.indexOf("=");
  if (at <= 0) {
    throw new UsageError(`Invalid --input '${pair.slice(0, 60)}': expected name=value`);
  }
  return { name: pair.slice(0, at), value: pair.slice(at + 1) };
}

/** `--keep-days`: whole days, 0 included (every ended run is due). */
function keepDaysOption(text: string): number {
  const value = /^[0-9]{1,6}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 0 && value <= MAX_KEEP_DAYS)) {
    throw new UsageError(
      `Invalid --keep-days '${text.slice(0, 30)}': give whole days from 0 to ${MAX_KEEP_DAYS}`,
    );
  }
  return value;
}

function unknownCommand(name: string): UsageError {
  return new UsageError(`Unknown command '${name.slice(0, 60)}': run 'pi-workflows --help'`);
}
