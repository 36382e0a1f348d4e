/**
 * The retention benchmark's arguments (retention.ts lists them): the database's size and the
 * pass's settings to compare.
 */
import { STEP_GAP_MS } from "../../src/host/retention-runner.ts";

const args = process.argv.slice(2);
export const SMOKE = args.includes("--smoke");
export const RUNS = SMOKE ? 200 : Number(args[args.indexOf("--runs") + 1] ?? "") || 100_000;
/**
 * `--prune-only`: the prune and its figures alone (no reads, doctor or large runs: those print
 * null), to compare the pass's own settings quickly.
 */
export const PRUNE_ONLY = args.includes("--prune-only") && !SMOKE;
/**
 * `--checkpoint-frames N`: WAL frames between the pass's own checkpoints (default: a commanded
 * pass's, `COMMANDED_CHECKPOINT_FRAMES`).
 */
export const CHECKPOINT_FRAMES = args.includes("--checkpoint-frames")
  ? Number(args[args.indexOf("--checkpoint-frames") + 1])
  : undefined;
/**
 * `--gap-sleep-ms N`: a timer of N ms between two steps of the pass, unless a checkpoint is waited
 * for, as the host's runner does (default: its pause between the steps of a commanded pass,
 * `STEP_GAP_MS`).
 */
export const GAP_SLEEP_MS = args.includes("--gap-sleep-ms")
  ? Number(args[args.indexOf("--gap-sleep-ms") + 1])
  : STEP_GAP_MS;
/**
 * `--checkpoints thread|inline`: the pass's checkpoints on the checkpoint runner's thread, as the
 * host runs them (default), or on the event loop (the baseline from before the runner).
 */
export const CHECKPOINTS = args.includes("--checkpoints")
  ? args[args.indexOf("--checkpoints") + 1]
  : "thread";
if (CHECKPOINTS !== "thread" && CHECKPOINTS !== "inline") {
  throw new Error(`--checkpoints must be thread or inline, not ${CHECKPOINTS}`);
}
/**
 * `--transaction-runs N`: runs one prune transaction takes at most (default: the pass's own; 1:
 * a run a transaction, as before several went in one).
 */
export const TRANSACTION_RUNS = args.includes("--transaction-runs")
  ? Number(args[args.indexOf("--transaction-runs") + 1])
  : undefined;
/**
 * `--trace-ms N`: the pass's write transactions of N ms or more (default 10; 0: none) are traced
 * statement by statement (_statement-trace.ts: verb, table, rows, time), with the main thread's
 * CPU, run-queue and blocked time and its storage reads and writes (/proc/thread-self/io) in them:
 * `prune.traced` keeps the ones with the most CPU and the most blocked.
 */
export const TRACE_MS = args.includes("--trace-ms")
  ? Number(args[args.indexOf("--trace-ms") + 1])
  : 10;
/** `--stall-probe-s N`: seconds of the busy-loop probe before the pass (default 5; 0: none). */
export const STALL_PROBE_S = args.includes("--stall-probe-s")
  ? Number(args[args.indexOf("--stall-probe-s") + 1])
  : SMOKE
  ? 0.2
  : 5;
/** `--budget-ms N`: the pass's time budget per transaction (default: the pass's own). */
export const BUDGET_MS = args.includes("--budget-ms")
  ? Number(args[args.indexOf("--budget-ms") + 1])
  : undefined;
/**
 * `--host-autocheckpoint N`: the host connection's `wal_autocheckpoint` while the pass runs
 * (default: the pass's interval and the host's own 4,000 frames above it, as the host raises it
 * for a commanded pass; never lowered: 4,000 with `--checkpoint-frames 3000` is the idle pass's).
 */
export const HOST_AUTOCHECKPOINT = args.includes("--host-autocheckpoint")
  ? Number(args[args.indexOf("--host-autocheckpoint") + 1])
  : undefined;
