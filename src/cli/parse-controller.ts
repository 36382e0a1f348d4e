/**
 * `pi-workflows controller list|get|apply|reconcile|delete|unbind ...` on the command line, parsed
 * into one `ControllerCommand` or a `UsageError` with one actionable line. There is no `bind`: a
 * session binding is approved from inside the Pi session it names (`/controller bind`).
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import { parseJsonText } from "../protocol/json-depth.ts";
import { UsageError } from "./exit-codes.ts";
import { parseStrict } from "./parse-args.ts";
import { modelArgs } from "./parse-start.ts";

export const CONTROLLER_ACTIONS = [
  "list",
  "get",
  "apply",
  "reconcile",
  "delete",
  "unbind",
] as const;
export type ControllerAction = (typeof CONTROLLER_ACTIONS)[number];

export interface ControllerCommand {
  kind: "controller";
  action: ControllerAction;
  /** The controller name (for apply also a path to its file); optional for list. */
  controller: string | null;
  key: string | null;
  cwd: string | null;
  /** apply: the spec as given with --spec-json, or the file named by --spec-file. */
  spec: { json: JsonValue } | { file: string } | null;
  /** apply: the exact source digest to accept. */
  digest: string | null;
  /** Compare-and-set on the resource version (0 for apply: it must be new). */
  expectVersion: number | null;
  wait: boolean;
  /** Seconds --wait waits at most. */
  timeoutSeconds: number;
  json: boolean;
  /** apply: `--provider`, `--model`, `--thinking` for the child runs' Pi. */
  piArgs: string[];
  /** reconcile: the reviewed verdict on an ambiguous effect (`--effect ID --applied J|--not-applied`). */
  resolveEffect:
    | { effectId: string; verdict: "applied" | "notApplied"; receipt?: JsonValue }
    | null;
}

const OPTIONS = {
  help: { type: "boolean", short: "h" },
  json: { type: "boolean" },
  cwd: { type: "string" },
  "spec-json": { type: "string" },
  "spec-file": { type: "string" },
  digest: { type: "string" },
  "expect-version": { type: "string" },
  wait: { type: "boolean" },
  timeout: { type: "string" },
  provider: { type: "string" },
  model: { type: "string" },
  thinking: { type: "string" },
  effect: { type: "string" },
  applied: { type: "string" },
  "not-applied": { type: "boolean" },
} as const;

/** Returns the command, or null for `controller --help` / `controller <action> --help`. */
export function parseControllerCommand(args: readonly string[]): ControllerCommand | null {
  const parsed = parseStrict("controller", args, OPTIONS);
  const values = parsed.values;
  if (values.help) return null;
  const [action, controller, key, ...extra] = parsed.positionals;
  if (action === undefined) {
    throw new UsageError(
      `Missing controller action: use one of ${
        CONTROLLER_ACTIONS.join(", ")
      } (pi-workflows controller --help)`,
    );
  }
  if (action === "bind") {
    throw new UsageError(
      "A session binding is approved inside the Pi session that should run the child runs: " +
        `type /controller bind ${controller?.slice(0, 64) ?? "<controller>"} there`,
    );
  }
  if (!(CONTROLLER_ACTIONS as readonly string[]).includes(action)) {
    throw new UsageError(
      `Unknown controller action '${action.slice(0, 40)}': use one of ${
        CONTROLLER_ACTIONS.join(", ")
      }`,
    );
  }
  const act = action as ControllerAction;
  const maxPositionals = act === "list" || act === "unbind" ? 1 : 2;
  const given = [controller, key].filter((p) => p !== undefined).length;
  if (extra.length > 0 || given > maxPositionals) {
    throw new UsageError(
      `Unexpected argument '${
        extra[0] ?? key
      }' for 'controller ${act}': run 'pi-workflows controller --help'`,
    );
  }
  if (act === "unbind" && controller === undefined) {
    throw new UsageError(
      "Missing argument for 'controller unbind': give <controller> (pi-workflows controller --help)",
    );
  }
  if (act !== "list" && act !== "unbind" && (controller === undefined || key === undefined)) {
    throw new UsageError(
      `Missing argument for 'controller ${act}': give <controller> <key> (pi-workflows controller --help)`,
    );
  }
  if (values["spec-json"] !== undefined && values["spec-file"] !== undefined) {
    throw new UsageError("Cannot combine --spec-json with --spec-file: pass one or the other");
  }
  const onlyFor = (name: string, actions: ControllerAction[]) => {
    if ((values as Record<string, unknown>)[name] !== undefined && !actions.includes(act)) {
      throw new UsageError(`Option --${name} is not for 'controller ${act}'`);
    }
  };
  onlyFor("spec-json", ["apply"]);
  onlyFor("spec-file", ["apply"]);
  onlyFor("digest", ["apply"]);
  onlyFor("expect-version", ["apply", "reconcile", "delete"]);
  onlyFor("wait", ["apply", "reconcile", "delete"]);
  onlyFor("timeout", ["apply", "reconcile", "delete"]);
  for (const name of ["provider", "model", "thinking"]) onlyFor(name, ["apply"]);
  for (const name of ["effect", "applied", "not-applied"]) onlyFor(name, ["reconcile"]);
  let spec: ControllerCommand["spec"] = null;
  if (values["spec-json"] !== undefined) {
    try {
      spec = { json: parseJsonText(values["spec-json"]) };
    } catch (error) {
      throw new UsageError(`Invalid --spec-json: ${(error as Error).message.split("\n")[0]}`);
    }
  } else if (values["spec-file"] !== undefined) {
    if (values["spec-file"] === "") throw new UsageError("Option --spec-file is empty");
    spec = { file: values["spec-file"] };
  }
  const digest = values.digest ?? null;
  if (digest !== null && !/^sha256:[0-9a-f]{64}$/.test(digest)) {
    throw new UsageError("Invalid --digest: expected sha256:<64 lowercase hex digits>");
  }
  if (values.cwd === "") throw new UsageError("Option --cwd is empty: give a project directory");
  return {
    kind: "controller",
    action: act,
    controller: controller ?? null,
    key: key ?? null,
    cwd: values.cwd ?? null,
    spec,
    digest,
    expectVersion: integerOption("--expect-version", values["expect-version"], 0),
    wait: values.wait === true,
    timeoutSeconds: integerOption("--timeout", values.timeout, 1) ?? 60,
    json: values.json === true,
    piArgs: modelArgs({ help: false, values, positionals: [] }),
    resolveEffect: effectVerdict(values.effect, values.applied, values["not-applied"] === true),
  };
}

function integerOption(name: string, raw: string | undefined, min: number): number | null {
  if (raw === undefined) return null;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || !Number.isSafeInteger(value) || value < min) {
    throw new UsageError(`Invalid ${name}: expected a whole number of at least ${min}`);
  }
  return value;
}

function effectVerdict(
  effectId: string | undefined,
  applied: string | undefined,
  notApplied: boolean,
): ControllerCommand["resolveEffect"] {
  if (effectId === undefined && applied === undefined && !notApplied) return null;
  if (effectId === undefined || effectId === "") {
    throw new UsageError(
      "Option --applied/--not-applied needs --effect <effectId> (see 'controller get')",
    );
  }
  if ((applied !== undefined) === notApplied) {
    throw new UsageError(
      "Option --effect needs exactly one verdict: --applied <receipt json> or --not-applied",
    );
  }
  if (notApplied) return { effectId, verdict: "notApplied" };
  try {
    return { effectId, verdict: "applied", receipt: parseJsonText(applied!) };
  } catch (error) {
    throw new UsageError(`Invalid --applied: ${(error as Error).message.split("\n")[0]}`);
  }
}
