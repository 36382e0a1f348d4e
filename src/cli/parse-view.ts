/** `view [runId] [--once] [--all] [--filter TEXT]`: parsing only, like parse-command.ts. */
import { UsageError } from "./exit-codes.ts";
import { flag, HELP, type HelpCommand, parse, runIdArg } from "./parse-args.ts";

export interface ViewCommand {
  kind: "view";
  runId: string | null;
  once: boolean;
  all: boolean;
  /** The runs list shows only runs whose id, workflow, title or state contains it. */
  filter: string;
}

export function parseView(argv: readonly string[]): ViewCommand | HelpCommand {
  const parsed = parse(
    "view",
    argv,
    {
      ...HELP,
      once: { type: "boolean" },
      all: { type: "boolean" },
      filter: { type: "string" },
    },
    0,
    1,
  );
  if (parsed.help) return { kind: "help", topic: "view" };
  const runId = parsed.positionals[0];
  const filter = (parsed.values.filter as string | undefined) ?? "";
  // deno-lint-ignore no-control-regex -- control characters are refused
  if (filter.length > 100 || /[\x00-\x1f\x7f]/.test(filter)) {
    throw new UsageError(
      "Invalid --filter for 'view': give up to 100 printable characters (part of a run id, " +
        "workflow, title or state)",
    );
  }
  return {
    kind: "view",
    runId: runId === undefined ? null : runIdArg("view", runId),
    once: flag(parsed, "once"),
    all: flag(parsed, "all"),
    filter,
  };
}
