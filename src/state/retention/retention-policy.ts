/** What a retention pass keeps and how long it may hold the write lock: its constants. */

export const DAY_MS = 24 * 3600_000;
/** The viewer delta (of no run) that says a pass deleted runs: viewers reload. */
export const RUNS_PRUNED_DELTA = "runs.pruned";
/** The retention period when neither config.json nor the command names one. */
export const DEFAULT_KEEP_DAYS = 30;
/**
 * How long after its last client receipt a run is kept at least, and how long after its end
 * before it is compacted: far past any client's retry deadline (60 s, plus one 5 s final try)
 * and a worker's last message, so no retry can find its receipt gone.
 */
export const RETRY_WINDOW_MS = 3600_000;
/** Viewer deltas are kept this long (a viewer further behind reloads). */
export const FEED_WINDOW_MS = 3600_000;
/** A write transaction of the pass stops taking more work once it has run this long. */
export const STEP_BUDGET_MS = 4;
