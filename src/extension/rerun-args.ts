/**
 * Parses `/workflow rerun …` and `/workflow retry …` into one command, or a `CommandArgsError`
 * with one actionable line. The options are the CLI's (docs/when-a-run-fails.md) less those that
 * need a shell: a new input is JSON typed in the line (last, it may hold spaces), and new model
 * arguments for a headless run need the Pi command the CLI finds, so they stay with the CLI.
 *
 *   /workflow rerun [runId] [--from <node>] [--visit N] [--source current|recorded]
 *                   [--input-json <json>]
 *   /workflow retry [runId]
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { RERUN_SOURCES, type RerunSource } from "../protocol/rerun-operations.ts";
import { CommandArgsError, parseJson, RUN_ID } from "./command-args.ts";

export const RERUN_USAGE =
  "Usage: /workflow rerun [runId] [--from <node>] [--visit N] [--source current|recorded] [--input-json <json>] | /workflow retry [runId]";

export interface RerunArgs {
  kind: "rerun";
  /** Null: this session's run. */
  runId: string | null;
  retry: boolean;
  from: string | null;
  visit: number | null;
  source: RerunSource | null;
  /** Undefined: the parent's input. */
  input?: JsonValue;
}

const VALUE_OPTIONS = ["--from", "--visit", "--source"];
const MODEL_OPTIONS = ["--provider", "--model", "--thinking", "--"];

export function parseRerunArgs(verb: "rerun" | "retry", raw: string): RerunArgs {
  const text = raw.trim();
  // `--input-json` takes the rest of the line: JSON may hold spaces.
  const json = text.match(/(^|\s)--input-json(\s|$)/);
  const head = json ? text.slice(0, json.index!).trim() : text;
  const words = head === "" ? [] : head.split(/\s+/);
  const args: RerunArgs = {
    kind: "rerun",
    runId: null,
    retry: verb === "retry",
    from: null,
    visit: null,
    source: null,
  };
  if (json) {
    if (verb === "retry") throw refused("--input-json", verb);
    const body = text.slice(json.index! + json[0].length).trim();
    if (body === "") throw new CommandArgsError("Missing JSON after --input-json");
    args.input = parseJson(body, "--input-json");
  }
  for (let i = 0; i < words.length; i++) {
    const word = words[i];
    if (!word.startsWith("--")) {
      if (args.runId !== null || i > 0) {
        throw new CommandArgsError(`Unexpected argument ${word.slice(0, 60)}: ${RERUN_USAGE}`);
      }
      if (!RUN_ID.test(word)) {
        throw new CommandArgsError(`Not a run id: ${word.slice(0, 60)} (run ids start with run-)`);
      }
      args.runId = word;
      continue;
    }
    if (MODEL_OPTIONS.includes(word)) {
      throw new CommandArgsError(
        `${word} is not taken here: new model arguments for a headless run are given with 'pi-workflows rerun <runId> ${
          word === "--" ? "-- <pi args>" : `${word} <value>`
        }' (without them a headless fork keeps its parent's)`,
      );
    }
    if (verb === "retry") throw refused(word, verb);
    if (!VALUE_OPTIONS.includes(word)) {
      throw new CommandArgsError(`Unknown option ${word.slice(0, 40)}: ${RERUN_USAGE}`);
    }
    const value = words[++i];
    if (value === undefined || value.startsWith("--")) {
      throw new CommandArgsError(`Missing value after ${word}`);
    }
    switch (word) {
      case "--from":
        args.from = value;
        break;
      case "--visit":
        if (!/^[1-9][0-9]{0,8}$/.test(value)) {
          throw new CommandArgsError(
            `Invalid --visit '${value.slice(0, 30)}': give a number from 1`,
          );
        }
        args.visit = Number(value);
        break;
      default:
        if (!(RERUN_SOURCES as readonly string[]).includes(value)) {
          throw new CommandArgsError(
            `Invalid --source '${value.slice(0, 40)}': use ${RERUN_SOURCES.join(" or ")}`,
          );
        }
        args.source = value as RerunSource;
        break;
    }
  }
  if (args.visit !== null && args.from === null) {
    throw new CommandArgsError("Option --visit needs --from: name the node whose visit to rerun");
  }
  return args;
}

function refused(option: string, verb: string): CommandArgsError {
  return new CommandArgsError(
    `/workflow ${verb} takes only a run id (it reruns the failed node on the file as it is now); ${
      option.slice(0, 40)
    } is for /workflow rerun`,
  );
}
