/**
 * The run environment: the variables a run's workers (and its source resolver) execute with. The
 * client that starts a run defines it: a small allowlisted base of its own environment plus the
 * variables the user passes explicitly. The host records it with the run, so a resumed or
 * recovered run gets the same environment, and the host's own environment never reaches runs.
 * The values are private: they are never shown in status, lists, events, viewers or logs.
 */
import * as v from "valibot";

import { ENV_NAME, type RunEnvironment } from "../base/env-names.ts";

export {
  baseRunEnvironment,
  isBaseEnvName,
  isEnvName,
  type RunEnvironment,
  runEnvironment,
} from "../base/env-names.ts";

export const MAX_ENV_VARIABLES = 256;
export const MAX_ENV_VALUE_CHARS = 32 * 1024;
/** Names and values together, in UTF-16 units; well inside one protocol message. */
export const MAX_ENV_TOTAL_CHARS = 256 * 1024;

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
