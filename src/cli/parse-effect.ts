/**
 * `pi-workflows effect resolve <runId> <attempt|effect> (--applied JSON | --not-applied |
 * --retry) [--operator NAME] [--json]`: the operator's verdict on an ambiguous effect.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import type { EffectVerdict } from "../protocol/effect-operations.ts";
import { UsageError } from "./exit-codes.ts";
import { flag, parse, runIdArg } from "./parse-args.ts";

export interface EffectResolveCommand {
  kind: "effect";
  action: "resolve";
  runId: string;
  target: string;
  verdict: EffectVerdict;
  output?: JsonValue;
  operator: string | null;
  json: boolean;
}

export function parseEffect(
  rest: readonly string[],
): EffectResolveCommand | { kind: "help"; topic: string } {
  const [action, ...args] = rest;
  if (action === "--help" || action === "-h") return { kind: "help", topic: "effect" };
  if (action !== "resolve") {
    throw new UsageError(
      action === undefined
        ? "Missing effect action: use 'pi-workflows effect resolve' (pi-workflows effect --help)"
        : `Unknown effect action '${action.slice(0, 60)}': use resolve`,
    );
  }
  const parsed = parse(
    "effect resolve",
    args,
    {
      help: { type: "boolean", short: "h" },
      json: { type: "boolean" },
      applied: { type: "string" },
      "not-applied": { type: "boolean" },
      retry: { type: "boolean" },
      operator: { type: "string" },
    },
    2,
    2,
  );
  if (parsed.help) return { kind: "help", topic: "effect" };
  const applied = parsed.values.applied;
  const verdicts = [
    typeof applied === "string" ? "applied" : null,
    flag(parsed, "not-applied") ? "notApplied" : null,
    flag(parsed, "retry") ? "retry" : null,
  ].filter((v): v is EffectVerdict => v !== null);
  if (verdicts.length !== 1) {
    throw new UsageError(
      "Name exactly one verdict: --applied <output-json>, --not-applied or --retry " +
        "(pi-workflows effect --help)",
    );
  }
  const [target] = parsed.positionals.slice(1);
  const operator = parsed.values.operator;
  return {
    kind: "effect",
    action: "resolve",
    runId: runIdArg("effect resolve", parsed.positionals[0]),
    target: runIdArg("effect resolve", target).trim(),
    verdict: verdicts[0],
    ...(typeof applied === "string" ? { output: parseOutput(applied) } : {}),
    operator: typeof operator === "string" && operator.trim() !== "" ? operator.trim() : null,
    json: flag(parsed, "json"),
  };
}

function parseOutput(text: string): JsonValue {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new UsageError(`Invalid --applied: ${(error as Error).message.split("\n")[0]}`);
  }
}
