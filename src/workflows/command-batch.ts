/**
 * `runCommandBatch`: several commands with bounded concurrency from inside a function action,
 * each with its own timeout and output cap. Results keep input order and every item settles with
 * an outcome; one failing command never stops the others.
 */
import { isAbsolute } from "node:path";
import { errorMessage, NodeFailure } from "./errors.ts";
import { runShell } from "./shell-runner.ts";
import { labelledStepOutput } from "./step-output-scope.ts";

export const COMMAND_BATCH_LIMITS = {
  items: 64,
  maxConcurrency: 8,
  timeoutMs: 3_600_000,
  maxOutputChars: 1_000_000,
} as const;

/** The limits and result schema under their 0.12 names (the same values). */
export const MAX_COMMAND_BATCH_ITEMS = COMMAND_BATCH_LIMITS.items;
export const MAX_COMMAND_BATCH_CONCURRENCY = COMMAND_BATCH_LIMITS.maxConcurrency;
export const MAX_COMMAND_BATCH_TIMEOUT_MS = COMMAND_BATCH_LIMITS.timeoutMs;
export const MAX_COMMAND_BATCH_OUTPUT_CHARS = COMMAND_BATCH_LIMITS.maxOutputChars;
export const COMMAND_BATCH_RESULT_SCHEMA = "pi-workflows.command-batch-result.v1";

export interface CommandBatchItem {
  id: string;
  command: string;
  args?: string[];
  /** Absolute working directory. */
  cwd: string;
  timeoutMs: number;
  maxOutputChars?: number;
  env?: Record<string, string>;
}

export interface CommandBatchItemResult {
  id: string;
  outcome: "succeeded" | "failed" | "timedOut" | "cancelled";
  command: string;
  args: string[];
  cwd: string;
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  /** Why the item did not succeed (absent when it did). */
  error?: string;
}

export interface CommandBatchResult {
  schema: "pi-workflows.command-batch-result.v1";
  /** In input order. */
  items: CommandBatchItemResult[];
  /** Items that ran to an outcome (not the ones a cancellation kept from starting). */
  completed: number;
  total: number;
}

export interface CommandBatchOptions {
  /** Stops running commands (their groups get SIGTERM) and starts no more. */
  signal?: AbortSignal;
  /**
   * Called after each item settles, with the running count; may be async. Observational: an
   * error it throws is ignored.
   */
  onItemSettled?: (
    result: CommandBatchItemResult,
    completed: number,
    total: number,
  ) => unknown;
}

export async function runCommandBatch(
  batch: { items: CommandBatchItem[]; maxConcurrency?: number },
  options: CommandBatchOptions = {},
): Promise<CommandBatchResult> {
  const items = checkBatch(batch);
  const limit = batch.maxConcurrency ?? 4;
  const total = items.length;
  const results: (CommandBatchItemResult | undefined)[] = new Array(total);
  const signal = options.signal;
  let next = 0;
  let completed = 0;
  const lane = async () => {
    while (next < total && !signal?.aborted) {
      const index = next++;
      const result = await runItem(items[index], signal);
      results[index] = result;
      completed++;
      try {
        await options.onItemSettled?.(result, completed, total);
      } catch {
        // Observational only: a failing callback cannot change the batch.
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, total) }, lane));
  const settled = Array.from(
    results,
    (r, i) =>
      r ?? notStarted(items[i], "cancelled", "The batch was cancelled before this command started"),
  );
  return { schema: "pi-workflows.command-batch-result.v1", items: settled, completed, total };
}

function notStarted(
  item: CommandBatchItem,
  outcome: CommandBatchItemResult["outcome"],
  error: string,
  durationMs = 0,
): CommandBatchItemResult {
  return {
    id: item.id,
    outcome,
    command: item.command,
    args: [...(item.args ?? [])],
    cwd: item.cwd,
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    stdoutTruncated: false,
    stderrTruncated: false,
    durationMs,
    error,
  };
}

async function runItem(
  item: CommandBatchItem,
  signal: AbortSignal | undefined,
): Promise<CommandBatchItemResult> {
  const started = Date.now();
  if (signal?.aborted) return notStarted(item, "cancelled", "The batch was cancelled");
  // Inside a step, the command's output also goes to the step's output files (logs).
  const copy = labelledStepOutput(item.id);
  try {
    const r = await runShell({
      command: item.command,
      args: item.args,
      cwd: item.cwd,
      env: item.env,
      timeoutMs: item.timeoutMs,
      maxOutputChars: item.maxOutputChars ?? 100_000,
      allowNonZeroExit: true,
    }, {
      signal: signal ?? new AbortController().signal,
      ...(copy ? { onOutput: copy.write } : {}),
    });
    const ok = r.exitCode === 0;
    return {
      id: item.id,
      outcome: ok ? "succeeded" : "failed",
      command: item.command,
      args: [...(item.args ?? [])],
      cwd: item.cwd,
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: r.stdout,
      stderr: r.stderr,
      stdoutTruncated: r.stdoutTruncated,
      stderrTruncated: r.stderrTruncated,
      durationMs: r.durationMs,
      ...(ok ? {} : {
        error: `Exited with ${r.exitCode === null ? `signal ${r.signal}` : `code ${r.exitCode}`}`,
      }),
    };
  } catch (error) {
    const timedOut = error instanceof NodeFailure && error.code === "commandTimedOut";
    return notStarted(
      item,
      signal?.aborted ? "cancelled" : timedOut ? "timedOut" : "failed",
      errorMessage(error, 2000),
      Date.now() - started,
    );
  } finally {
    copy?.flush();
  }
}

function checkBatch(
  batch: { items: CommandBatchItem[]; maxConcurrency?: number },
): CommandBatchItem[] {
  const bad = (detail: string): never => {
    throw new RangeError(`Invalid command batch: ${detail}`);
  };
  const items = batch?.items;
  if (!Array.isArray(items)) bad("items must be an array");
  if (items.length > COMMAND_BATCH_LIMITS.items) bad(`at most ${COMMAND_BATCH_LIMITS.items} items`);
  const c = batch.maxConcurrency;
  if (
    c !== undefined && (!Number.isInteger(c) || c < 1 || c > COMMAND_BATCH_LIMITS.maxConcurrency)
  ) {
    bad(`maxConcurrency must be 1-${COMMAND_BATCH_LIMITS.maxConcurrency}`);
  }
  const ids = new Set<string>();
  for (const item of items) {
    if (typeof item?.id !== "string" || item.id.length === 0) bad("every item needs an id");
    if (ids.has(item.id)) bad(`duplicate id "${item.id}"`);
    ids.add(item.id);
    if (typeof item.cwd !== "string" || !isAbsolute(item.cwd)) {
      bad(`item "${item.id}": cwd must be absolute`);
    }
    if (
      !Number.isInteger(item.timeoutMs) || item.timeoutMs < 1 ||
      item.timeoutMs > COMMAND_BATCH_LIMITS.timeoutMs
    ) {
      bad(`item "${item.id}": timeoutMs must be 1-${COMMAND_BATCH_LIMITS.timeoutMs}`);
    }
    const cap = item.maxOutputChars;
    if (
      cap !== undefined &&
      (!Number.isInteger(cap) || cap < 0 || cap > COMMAND_BATCH_LIMITS.maxOutputChars)
    ) {
      bad(`item "${item.id}": maxOutputChars must be 0-${COMMAND_BATCH_LIMITS.maxOutputChars}`);
    }
  }
  return items;
}
