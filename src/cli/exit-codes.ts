/**
 * Exit codes of the `pi-workflows` CLI (documented in docs/cli.md). Scripts can tell a usage
 * mistake from a refused request and from a host that could not be reached.
 */
import { HostUnavailableError, WorkflowFailureError } from "../protocol/failures.ts";
import { isBadSetting } from "../protocol/host-ready.ts";

export const EXIT = {
  /** The command did what was asked (for `start --wait`: the run completed). */
  ok: 0,
  /** Anything else went wrong (an unexpected error, a failed local operation). */
  failure: 1,
  /** The command line was wrong: unknown command or option, missing or bad argument. */
  usage: 2,
  /** The host answered `rejected`, `conflict`, `notFound` or `claimLost`. */
  refused: 3,
  /** The host could not be reached or started (`hostUnavailable`), or it is stopping. */
  hostUnavailable: 4,
  /** `doctor` found a state invariant violated or a state file it cannot use. */
  invariantsViolated: 5,
  /** `start --wait`: the run ended `failed`, `timed_out` or `cancelled`. */
  runUnsuccessful: 6,
  /** `start --wait`: the run stopped without ending (waiting for input, paused or blocked). */
  runNeedsAttention: 7,
  /**
   * No usable Pi (missing, too old, broken) or an invalid `config.json` (read only while
   * PI_WORKFLOWS_PI is unset), before anything is queued: `start` (a bad config.json; no Pi for
   * agent steps, Pi arguments or --project-context), `rerun` with Pi arguments, and `schedule
   * add|apply` and `controller apply` (a bad config.json; no Pi with Pi arguments). docs/cli.md.
   */
  piUnavailable: 8,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Raised for a bad command line; the message is one actionable line. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** The exit code for an error that ended a command (re-exported by run-cli.ts). */
export function exitCodeFor(error: unknown): number {
  if (error instanceof UsageError) return EXIT.usage;
  if (error instanceof HostUnavailableError) return EXIT.hostUnavailable;
  if (error instanceof WorkflowFailureError && error.failureClass === "hostUnavailable") {
    return EXIT.hostUnavailable;
  }
  if (isBadSetting(error)) return EXIT.usage;
  return EXIT.failure;
}
