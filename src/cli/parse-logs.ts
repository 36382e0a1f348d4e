/**
 * `logs <runId> [<node>] [--follow] [--attempts N] [--json]`: parsing only, like
 * parse-command.ts.
 */
import { MAX_LOG_STEPS } from "../protocol/log-operations.ts";
import { UsageError } from "./exit-codes.ts";
import { countOption, flag, type HelpCommand, JSON_FLAG, parse, runIdArg } from "./parse-args.ts";

export interface LogsCommand {
  kind: "logs";
  runId: string;
  /** Only this node's steps; null: every step. */
  nodeId: string | null;
  /** Keep printing what the run's steps print until it ends. */
  follow: boolean;
  /** The last N steps (attempts). */
  attempts: number;
  json: boolean;
}

/** Steps `logs` shows without `--attempts`. */
export const DEFAULT_LOG_ATTEMPTS = 20;

export function parseLogs(argv: readonly string[]): LogsCommand | HelpCommand {
  const parsed = parse(
    "logs",
    argv,
    {
      ...JSON_FLAG,
      follow: { type: "boolean", short: "f" },
      attempts: { type: "string" },
    },
    1,
    2,
  );
  if (parsed.help) return { kind: "help", topic: "logs" };
  const node = parsed.positionals[1];
  if (node !== undefined && (node === "" || node.length > 1000)) {
    throw new UsageError("Invalid node name for 'logs': see 'pi-workflows status <runId>'");
  }
  const attempts = parsed.values.attempts;
  return {
    kind: "logs",
    runId: runIdArg("logs", parsed.positionals[0]),
    nodeId: node ?? null,
    follow: flag(parsed, "follow"),
    attempts: typeof attempts === "string"
      ? countOption("--attempts", attempts, MAX_LOG_STEPS, "")
      : DEFAULT_LOG_ATTEMPTS,
    json: flag(parsed, "json"),
  };
}
