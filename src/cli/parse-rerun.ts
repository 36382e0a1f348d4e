/**
 * `rerun <runId> [--from <node>] [--visit n] [--source current|recorded] [--input-json <json|->
 * | --input-file <path>] [--env] [--wait] [--provider --model --thinking] [-- <pi args>]` and
 * `retry <runId> [--env] [--wait]`: parsing only, like parse-command.ts.
 */
import { refusedPiArgument } from "../protocol/pi-launch.ts";
import { RERUN_SOURCES, type RerunSource } from "../protocol/rerun-operations.ts";
import { UsageError } from "./exit-codes.ts";
import { flag, type HelpCommand, JSON_FLAG, parse, runIdArg } from "./parse-args.ts";
import {
  type EnvOption,
  envOptions,
  type InputSource,
  modelArgs,
  parseInputJson,
} from "./parse-start.ts";

export interface RerunCommand {
  kind: "rerun";
  runId: string;
  /** `retry`: rerun the failed node on the current source. */
  retry: boolean;
  from: string | null;
  visit: number | null;
  source: RerunSource | null;
  /** A new input; null: the parent's. */
  input: InputSource | null;
  env: EnvOption[];
  wait: boolean;
  json: boolean;
  /** New model arguments for a headless fork; empty: the parent's. */
  piArgs: string[];
}

export function parseRerun(
  name: "rerun" | "retry",
  argv: readonly string[],
): RerunCommand | HelpCommand {
  const split = argv.indexOf("--");
  const rest = split === -1 ? argv : argv.slice(0, split);
  const passthrough = split === -1 ? [] : argv.slice(split + 1);
  const common = {
    ...JSON_FLAG,
    env: { type: "string", multiple: true },
    wait: { type: "boolean" },
  } as const;
  const parsed = parse(
    name,
    rest,
    name === "retry" ? common : {
      ...common,
      from: { type: "string" },
      visit: { type: "string" },
      source: { type: "string" },
      "input-json": { type: "string" },
      "input-file": { type: "string" },
      provider: { type: "string" },
      model: { type: "string" },
      thinking: { type: "string" },
    },
    1,
    1,
  );
  if (parsed.help) return { kind: "help", topic: name };
  if (name === "retry" && passthrough.length > 0) {
    throw new UsageError("'retry' takes no Pi arguments: use 'pi-workflows rerun' to change them");
  }
  const refused = refusedPiArgument(passthrough);
  if (refused !== null) throw new UsageError(refused);
  const from = parsed.values.from;
  if (from === "") throw new UsageError("Option --from is empty: name a node the run ran");
  const source = parsed.values.source;
  if (typeof source === "string" && !(RERUN_SOURCES as readonly string[]).includes(source)) {
    throw new UsageError(
      `Invalid --source '${source.slice(0, 40)}': use ${RERUN_SOURCES.join(" or ")}`,
    );
  }
  const visit = parsed.values.visit;
  if (typeof visit === "string" && !/^[1-9][0-9]{0,8}$/.test(visit)) {
    throw new UsageError(`Invalid --visit '${visit.slice(0, 30)}': give a number from 1`);
  }
  if (typeof visit === "string" && typeof from !== "string") {
    throw new UsageError("Option --visit needs --from: name the node whose visit to rerun");
  }
  return {
    kind: "rerun",
    runId: runIdArg(name, parsed.positionals[0]),
    retry: name === "retry",
    from: typeof from === "string" ? from : null,
    visit: typeof visit === "string" ? Number(visit) : null,
    source: typeof source === "string" ? source as RerunSource : null,
    input: rerunInput(parsed.values["input-json"], parsed.values["input-file"]),
    env: envOptions(parsed.values.env),
    wait: flag(parsed, "wait"),
    json: flag(parsed, "json"),
    piArgs: name === "retry" ? [] : [...modelArgs(parsed), ...passthrough],
  };
}

function rerunInput(json: unknown, file: unknown): InputSource | null {
  if (typeof json === "string" && typeof file === "string") {
    throw new UsageError("Cannot combine --input-json and --input-file: pass one of them");
  }
  if (typeof file === "string") {
    if (file === "") throw new UsageError("Option --input-file is empty: give a file path");
    return { kind: "file", path: file };
  }
  if (typeof json === "string") {
    return json === "-" ? { kind: "stdin" } : { kind: "value", value: parseInputJson(json) };
  }
  return null;
}
