/**
 * How a run executes: `interactive` (started from Pi with an origin session) or `headless` (CLI,
 * controllers). A file of its own so the worker's launch envelope can name the modes without
 * loading every socket operation's schema (run-operations.ts) before `worker.ready`.
 */
export const EXECUTION_MODES = ["interactive", "headless"] as const;
export type ExecutionMode = (typeof EXECUTION_MODES)[number];
