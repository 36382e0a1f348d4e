/**
 * Controller scheduling tunables, each with a documented default (docs/controllers.md). The host
 * main reads them with `readControllerOptions(process.env)`; tests pass short values directly.
 */
import { readPositiveIntegerOptions } from "../../os/env-integer.ts";

export interface ControllerOptions {
  /**
   * Reconciles running at once, across all controllers. They share one worker process per
   * controller and the host's group commit, so more at once mostly costs a few MB in that
   * worker; child runs they start queue with every other run (their own bound), so this does not
   * take run worker slots.
   */
  maxConcurrentReconciles: number;
  /** An idle controller worker (no reconcile for this long) is stopped. */
  workerIdleMs: number;
  /** An idle controller source resolver is stopped. */
  resolverIdleMs: number;
  /** Backoff of the first error; it doubles per error in a row, up to `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
}

export const DEFAULT_CONTROLLER_OPTIONS: ControllerOptions = {
  maxConcurrentReconciles: 32,
  workerIdleMs: 10_000,
  resolverIdleMs: 5_000,
  backoffBaseMs: 1_000,
  backoffMaxMs: 60_000,
};

const ENV_NAMES = {
  maxConcurrentReconciles: "PI_WORKFLOWS_MAX_RECONCILES",
  workerIdleMs: "PI_WORKFLOWS_CONTROLLER_IDLE_MS",
  resolverIdleMs: "PI_WORKFLOWS_CONTROLLER_RESOLVER_IDLE_MS",
  backoffBaseMs: "PI_WORKFLOWS_RECONCILE_BACKOFF_MS",
  backoffMaxMs: "PI_WORKFLOWS_RECONCILE_BACKOFF_MAX_MS",
} as const satisfies Record<keyof ControllerOptions, string>;

export function readControllerOptions(env: NodeJS.ProcessEnv = process.env): ControllerOptions {
  const options: ControllerOptions = readPositiveIntegerOptions(
    env,
    ENV_NAMES,
    DEFAULT_CONTROLLER_OPTIONS,
  );
  if (options.backoffMaxMs < options.backoffBaseMs) {
    throw new RangeError(
      `Invalid PI_WORKFLOWS_RECONCILE_BACKOFF_MAX_MS: it must be at least the base backoff (${options.backoffBaseMs})`,
    );
  }
  return options;
}

/** Jitter of a backoff delay: +-20 %, so resources that failed together do not retry together. */
export const BACKOFF_JITTER = 0.2;

/**
 * The delay before the attempt after `errors` errors in a row (errors >= 1): base * 2^(errors-1),
 * jittered by `random()` in [0, 1), never above the maximum.
 */
export function reconcileBackoffMs(
  errors: number,
  options: Pick<ControllerOptions, "backoffBaseMs" | "backoffMaxMs">,
  random: () => number = Math.random,
): number {
  const exponent = Math.min(Math.max(errors, 1) - 1, 30);
  const raw = Math.min(options.backoffMaxMs, options.backoffBaseMs * 2 ** exponent);
  const factor = 1 + (random() * 2 - 1) * BACKOFF_JITTER;
  return Math.max(1, Math.min(options.backoffMaxMs, Math.round(raw * factor)));
}
