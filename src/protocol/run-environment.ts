/**
 * The run environment: the variables a run's workers (and its source resolver) execute with. The
 * client that starts a run defines it: a small allowlisted base of its own environment plus the
 * variables the user passes explicitly. The host records it with the run, so a resumed or
 * recovered run gets the same environment, and the host's own environment never reaches runs.
 * The values are private: they are never shown in status, lists, events, viewers or logs.
 */
import * as v from "valibot";

/** Variables a run takes from the starting client without being asked. */
const BASE_NAMES: ReadonlySet<string> = new Set([
  "PATH",
  "HOME",
  "USER",
  "LOGNAME",
  "SHELL",
  "LANG",
  "LANGUAGE",
  "TERM",
  "COLORTERM",
  "TZ",
  "TMPDIR",
  "TMP",
  "TEMP",
  "XDG_CONFIG_HOME",
  "XDG_CACHE_HOME",
  "XDG_DATA_HOME",
  "XDG_STATE_HOME",
  "XDG_RUNTIME_DIR",
  "PI_CODING_AGENT_DIR",
  // Pi's own switches (never secrets), so a headless run's Pi behaves as the user's does.
  "PI_OFFLINE",
  "PI_TELEMETRY",
  "PI_SKIP_VERSION_CHECK",
]);

/** `LC_ALL`, `LC_CTYPE`, ...: locale settings travel with LANG. */
const BASE_PREFIX = /^LC_[A-Z]+$/;

export const MAX_ENV_VARIABLES = 256;
export const MAX_ENV_VALUE_CHARS = 32 * 1024;
/** Names and values together, in UTF-16 units; well inside one protocol message. */
export const MAX_ENV_TOTAL_CHARS = 256 * 1024;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;

export type RunEnvironment = Record<string, string>;

export function isEnvName(name: string): boolean {
  return ENV_NAME.test(name);
}

export function isBaseEnvName(name: string): boolean {
  return BASE_NAMES.has(name) || BASE_PREFIX.test(name);
}

/** The allowlisted base of `env`: PATH, HOME, USER, SHELL, LANG, LC_*, TERM, TMPDIR and the like. */
export function baseRunEnvironment(env: Record<string, string | undefined>): RunEnvironment {
  const base: RunEnvironment = {};
  for (const [name, value] of Object.entries(env)) {
    if (value !== undefined && isBaseEnvName(name) && !value.includes("\0")) base[name] = value;
  }
  return base;
}

/** The base of `clientEnv` with `explicit` variables on top (they win). */
export function runEnvironment(
  clientEnv: Record<string, string | undefined>,
  explicit: RunEnvironment = {},
): RunEnvironment {
  return { ...baseRunEnvironment(clientEnv), ...explicit };
}

function totalChars(env: RunEnvironment): number {
  let total = 0;
  for (const [name, value] of Object.entries(env)) total += name.length + value.length;
  return total;
}

export const RunEnvironmentSchema = v.pipe(
  v.record(
    v.pipe(
      v.string(),
      v.regex(ENV_NAME, "Invalid environment variable name: expected [A-Za-z_][A-Za-z0-9_]*"),
    ),
    v.pipe(
      v.string(),
      v.maxLength(
        MAX_ENV_VALUE_CHARS,
        `Environment value too long: at most ${MAX_ENV_VALUE_CHARS} characters`,
      ),
      v.check((value) => !value.includes("\0"), "Environment value contains a NUL character"),
    ),
  ),
  v.check(
    (env) => Object.keys(env).length <= MAX_ENV_VARIABLES,
    `Too many environment variables: at most ${MAX_ENV_VARIABLES}`,
  ),
  v.check(
    (env) => totalChars(env) <= MAX_ENV_TOTAL_CHARS,
    `Environment too large: at most ${MAX_ENV_TOTAL_CHARS} characters of names and values`,
  ),
);
