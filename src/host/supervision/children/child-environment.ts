/**
 * The environment of a run's children (workers and the source resolver): exactly the run
 * environment recorded with the run, plus the few host variables that configure the children
 * themselves (crash-test hooks; under Deno, Deno's own settings) and the supervision's extras.
 * Nothing else of the host's environment reaches a run: the host may have been started from any
 * terminal, and a token exported there must not reach every later run.
 */
import { join } from "node:path";
import { baseRunEnvironment, type RunEnvironment } from "../../../protocol/run-environment.ts";
import { readRunEnvironment } from "../../../state/run-environments.ts";
import type { StateStore } from "../../../state/store.ts";
import { detectRuntime } from "../../../os/self-launch.ts";
import { PROCESS_BACKEND_ENV, processBackend } from "../../../os/process-backend.ts";

const CRASH_HOOKS = /^PI_WORKFLOWS_CRASH_(AT|ONCE)$/;
const DENO_SETTINGS = /^DENO_[A-Z_]+$/;

/** The recorded environment of `runId`; the allowlisted base of the host's own if none was. */
export function recordedRunEnvironment(store: StateStore, runId: string): RunEnvironment {
  return readRunEnvironment(store, runId) ?? baseRunEnvironment(process.env);
}

export function childEnvironment(
  runEnvironment: RunEnvironment,
  extras: NodeJS.ProcessEnv = {},
  hostEnv: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...runEnvironment };
  const deno = detectRuntime() === "deno";
  for (const [name, value] of Object.entries(hostEnv)) {
    if (value !== undefined && (CRASH_HOOKS.test(name) || deno && DENO_SETTINGS.test(name))) {
      env[name] = value;
    }
  }
  // The host's process backend, so a worker names its processes the way its host reads them.
  return { ...env, [PROCESS_BACKEND_ENV]: processBackend().name, ...extras };
}

/**
 * Node's compile cache for a child the host starts in `stateDir` (workers, the resolver, the
 * validation child): compiled code of the CLI and of workflow modules is kept in the user-only
 * state directory, so later children skip parsing and type stripping. Node reads the variable
 * at start-up; the child removes it from its own environment at once (src/worker/main.ts) so
 * nothing it starts inherits it. A run environment that sets it keeps its own value.
 */
export function compileCacheEnv(
  stateDir: string,
  runEnvironment: RunEnvironment,
): NodeJS.ProcessEnv {
  if (detectRuntime() === "deno" || runEnvironment.NODE_COMPILE_CACHE !== undefined) return {};
  return { NODE_COMPILE_CACHE: join(stateDir, COMPILE_CACHE_DIR) };
}

/** The compile cache's directory name inside the state directory. */
export const COMPILE_CACHE_DIR = "compile-cache";
