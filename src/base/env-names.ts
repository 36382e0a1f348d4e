/**
 * Names of the run environment (run-environment.ts holds its wire schema): which variables of
 * the starting client a run takes without being asked, and how a run environment is built. No
 * dependencies, so the CLI's argument parser can use it without loading any schema.
 */
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

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,255}$/;

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
