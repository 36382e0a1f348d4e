/**
 * The shared tools of the command parsers (parse-command.ts and the parse-*.ts it dispatches to):
 * strict node:util parseArgs with one-line usage errors, flags, counts and run ids.
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { UsageError } from "./exit-codes.ts";

/** What a parser returns for `<command> --help`. */
export interface HelpCommand {
  kind: "help";
  topic: string | null;
}

export type Options = NonNullable<ParseArgsConfig["options"]>;

export const HELP: Options = { help: { type: "boolean", short: "h" } };
export const JSON_FLAG: Options = { ...HELP, json: { type: "boolean" } };
const MAX_RUN_ID_LENGTH = 200;

export interface Parsed {
  help: boolean;
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

export function parse(
  command: string,
  args: readonly string[],
  options: Options,
  minPositionals: number,
  maxPositionals: number,
): Parsed {
  const result = parseStrict(command, args, options);
  const values = result.values as Record<string, string | boolean | string[] | undefined>;
  const help = values.help === true;
  if (help) return { help, values, positionals: result.positionals };
  const count = result.positionals.length;
  if (count < minPositionals) {
    throw new UsageError(
      `Missing argument for '${command}': run 'pi-workflows ${command} --help'`,
    );
  }
  if (count > maxPositionals) {
    throw new UsageError(
      `Unexpected argument '${
        result.positionals[maxPositionals]
      }' for '${command}': run 'pi-workflows ${command} --help'`,
    );
  }
  return { help, values, positionals: result.positionals };
}

/**
 * node:util's strict parseArgs of `args` (negative values taken as values), its error one usage
 * line naming `pi-workflows <command> --help`.
 */
export function parseStrict<O extends Options>(
  command: string,
  args: readonly string[],
  options: O,
) {
  try {
    return parseArgs({
      args: withNegativeValues(args, options),
      options,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(`${describeParseError(error)}: run 'pi-workflows ${command} --help'`);
  }
}

/**
 * `--limit -3` as `--limit=-3`: parseArgs takes a value starting with a dash for an option and
 * refuses it as ambiguous ("needs a value"); a negative number is never an option here, so it is
 * the value, and the option's own check then names it and the valid range.
 */
function withNegativeValues(args: readonly string[], options: Options): string[] {
  const takesValue = (arg: string) =>
    arg.startsWith("--") && options[arg.slice(2)]?.type === "string";
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const next = args[i + 1];
    if (next !== undefined && /^-[0-9.]/.test(next) && takesValue(args[i])) {
      out.push(`${args[i]}=${next}`);
      i++;
    } else {
      out.push(args[i]);
    }
  }
  return out;
}

function describeParseError(error: unknown): string {
  const code = (error as { code?: string }).code;
  const message = String((error as Error).message ?? error).split("\n")[0];
  // Node names an option with a short form as '-f, --follow' (and '-l, --limit <value>'): the
  // long name is the one to print.
  const option = /'(?:-[^-\s'], )?(-[^' ]*)/.exec(message)?.[1];
  switch (code) {
    case "ERR_PARSE_ARGS_UNKNOWN_OPTION":
      return `Unknown option '${option ?? "?"}'`;
    case "ERR_PARSE_ARGS_INVALID_OPTION_VALUE":
      // The same code for `--limit` without a value and `--json=x` on a flag.
      if (option && /does not take an argument/.test(message)) {
        return `Option '${option}' takes no value`;
      }
      return option ? `Option '${option}' needs a value` : "Invalid option value";
    default:
      return message.replace(/\.$/, "");
  }
}

export function flag(parsed: Parsed, name: string): boolean {
  return parsed.values[name] === true;
}

/** A positive integer option value, at most `max`. */
export function countOption(
  option: string,
  text: string,
  max: number,
  alternative: string,
): number {
  const value = /^[0-9]{1,16}$/.test(text) ? Number(text) : NaN;
  if (!(value >= 1 && value <= max)) {
    throw new UsageError(
      `Invalid ${option} '${text.slice(0, 30)}': give a number from 1${
        max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ""
      }${alternative ? ` ${alternative}` : ""}`,
    );
  }
  return value;
}

export function runIdArg(command: string, value: string | undefined): string {
  if (value === undefined || value.trim() === "") {
    throw new UsageError(`Missing run id for '${command}': see 'pi-workflows list'`);
  }
  if (value.length > MAX_RUN_ID_LENGTH || !/^[\x21-\x7e]+$/.test(value)) {
    throw new UsageError(`Invalid run id for '${command}': see 'pi-workflows list'`);
  }
  return value;
}
