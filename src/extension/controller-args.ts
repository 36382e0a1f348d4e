/**
 * Parses the arguments of `/controller` into one command, or a `CommandArgsError` with one
 * actionable line. Parsing only; names and keys are checked with the protocol's schemas.
 *
 *   /controller [list [controller]]
 *   /controller get <controller> <key>
 *   /controller apply <controller|path> <key> [--expect-version N] [--digest D] [<spec json>]
 *   /controller reconcile <controller> <key> [--expect-version N]
 *               [--effect ID --not-applied | --effect ID --applied <receipt json>]
 *   /controller delete <controller> <key> [--expect-version N]
 *   /controller bind <controller>      (approve this session for its interactive child runs)
 *   /controller unbind <controller>
 */
import * as v from "valibot";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import { ControllerNameSchema, ResourceKeySchema } from "../protocol/controller-resource.ts";
import { DigestSchema } from "../protocol/fields.ts";
import { CommandArgsError } from "./command-args.ts";

export type ControllerCommand =
  | { action: "list"; controller: string | null }
  | { action: "get"; controller: string; key: string }
  | {
    action: "apply";
    controller: string;
    key: string;
    spec: JsonValue | undefined;
    expectVersion: number | null;
    digest: string | null;
  }
  | {
    action: "reconcile";
    controller: string;
    key: string;
    expectVersion: number | null;
    resolveEffect: EffectVerdict | null;
  }
  | { action: "delete"; controller: string; key: string; expectVersion: number | null }
  | { action: "bind" | "unbind"; controller: string };

export interface EffectVerdict {
  effectId: string;
  verdict: "applied" | "notApplied";
  receipt?: JsonValue;
}

export const CONTROLLER_USAGE =
  "Usage: /controller [list [controller] | get <controller> <key> | apply <controller> <key> [--expect-version N] [--digest D] [<spec json>] | reconcile <controller> <key> [--expect-version N] [--effect ID --not-applied|--applied <json>] | delete <controller> <key> [--expect-version N] | bind <controller> | unbind <controller>]";

const ACTIONS = ["list", "get", "apply", "reconcile", "delete", "bind", "unbind"];

export function parseControllerArgs(raw: string): ControllerCommand {
  let rest = raw.trim();
  const next = (): string | undefined => {
    const word = /^\S+/.exec(rest)?.[0];
    if (word !== undefined) rest = rest.slice(word.length).trimStart();
    return word;
  };
  const action = next() ?? "list";
  if (action === "help" || action === "--help") throw new CommandArgsError(CONTROLLER_USAGE);
  if (!ACTIONS.includes(action)) {
    throw new CommandArgsError(
      `Unknown /controller action '${action.slice(0, 40)}': use one of ${ACTIONS.join(", ")}`,
    );
  }
  if (action === "list") {
    const controller = next();
    if (rest !== "") throw new CommandArgsError("Too many arguments for /controller list");
    return { action, controller: controller === undefined ? null : name(controller) };
  }
  if (action === "bind" || action === "unbind") {
    const controller = next();
    if (controller === undefined) {
      throw new CommandArgsError(`Missing argument: /controller ${action} <controller>`);
    }
    if (rest !== "") throw new CommandArgsError(`Too many arguments for /controller ${action}`);
    return { action, controller: name(controller) };
  }
  const controller = next();
  const key = next();
  if (controller === undefined || key === undefined) {
    throw new CommandArgsError(`Missing argument: /controller ${action} <controller> <key>`);
  }
  const ref = {
    // apply also takes a path to a .controller.ts file; the host resolves and checks it.
    controller: action === "apply" ? controller : name(controller),
    key: checked(ResourceKeySchema, key),
  };
  if (action === "get") {
    if (rest !== "") throw new CommandArgsError("Too many arguments for /controller get");
    return { action, ...ref };
  }
  let expectVersion: number | null = null;
  let digest: string | null = null;
  let effectId: string | null = null;
  let verdict: Omit<EffectVerdict, "effectId"> | null = null;
  for (;;) {
    if (rest.startsWith("--expect-version")) {
      next();
      expectVersion = version(next());
    } else if (rest.startsWith("--digest") && action === "apply") {
      next();
      digest = checked(DigestSchema, next() ?? "");
    } else if (rest.startsWith("--effect") && action === "reconcile") {
      next();
      effectId = next() ?? "";
    } else if (rest.startsWith("--not-applied") && action === "reconcile") {
      next();
      verdict = { verdict: "notApplied" };
    } else if (rest.startsWith("--applied") && action === "reconcile") {
      next();
      if (rest === "") throw new CommandArgsError("Missing receipt JSON after --applied");
      verdict = { verdict: "applied", receipt: json(rest, "receipt JSON") };
      rest = "";
    } else if (rest.startsWith("--")) {
      throw new CommandArgsError(`Unknown option ${next()}: ${CONTROLLER_USAGE}`);
    } else break;
  }
  if (action === "apply") {
    return { action, ...ref, spec: rest === "" ? undefined : json(rest), expectVersion, digest };
  }
  if (rest !== "") throw new CommandArgsError(`Too many arguments for /controller ${action}`);
  if (action === "delete") return { action, ...ref, expectVersion };
  if ((effectId === null) !== (verdict === null) || effectId === "") {
    throw new CommandArgsError(
      "An effect verdict needs both: --effect <effectId> and --not-applied or --applied <json>",
    );
  }
  const resolveEffect = effectId && verdict ? { effectId, ...verdict } : null;
  return { action: "reconcile", ...ref, expectVersion, resolveEffect };
}

function name(text: string): string {
  return checked(ControllerNameSchema, text);
}

function checked(schema: v.GenericSchema<unknown, string>, text: string): string {
  const result = v.safeParse(schema, text);
  if (!result.success) throw new CommandArgsError(result.issues[0].message);
  return result.output;
}

function version(text: string | undefined): number {
  const value = Number(text);
  if (text === undefined || !/^\d+$/.test(text) || !Number.isSafeInteger(value)) {
    throw new CommandArgsError("Invalid --expect-version: expected a whole number (0: new)");
  }
  return value;
}

function json(text: string, what = "spec JSON"): JsonValue {
  try {
    return parseJsonText(text);
  } catch (error) {
    throw new CommandArgsError(`Invalid ${what}: ${(error as Error).message.split("\n")[0]}`);
  }
}
