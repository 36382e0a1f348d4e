/**
 * `runCommandBatch`: several commands with bounded concurrency from inside a function action,
 * each with its own timeout and output cap. Results keep input order and every item settles with
 * an outcome; one failing command never stops the others.
 */
import { isAbsolute } from "node:path";
import { errorMessage, NodeFailure } from "./errors.ts";
import { runShell } from "./shell-runner.ts";

export const COMMAND_BATCH_LIMITS = {
  items: 64,
  maxConcurrency: 8,
  timeoutMs: 3_600_000,
  maxOutputChars: 1_000_000,
} as const;

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
  exitCode: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  durationMs: number;
  error: string | null;
}

export interface CommandBatchResult {
  schema: "pi-workflows.command-batch-result.v1";
  items: CommandBatchItemResult[];
}

export async function runCommandBatch(
  batch: { items: CommandBatchItem[]; maxConcurrency?: number },
  options: { signal: AbortSignal; onItemSettled?: (result: CommandBatchItemResult) => void },
): Promise<CommandBatchResult> {
  const items = checkBatch(batch);
  const limit = batch.maxConcurrency ?? 4;
  const results: CommandBatchItemResult[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await runItem(items[index], options.signal);
      options.onItemSettled?.(results[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return { schema: "pi-workflows.command-batch-result.v1", items: results };
}

async function runItem(
  item: CommandBatchItem,
  signal: AbortSignal,
): Promise<CommandBatchItemResult> {
  const started = Date.now();
  const empty = {
    id: item.id,
    exitCode: null,
    signal: null,
    stdout: "",
    stderr: "",
    stdoutTruncated: false,
    stderrTruncated: false,
  };
  if (signal.aborted) {
    return { ...empty, outcome: "cancelled", durationMs: 0, error: "The batch was cancelled" };
  }
  try {
    const r = await runShell({
      command: item.command,
      args: item.args,
      cwd: item.cwd,
      env: item.env,
      timeoutMs: item.timeoutMs,
      maxOutputChars: item.maxOutputChars ?? 100_000,
      allowNonZeroExit: true,
    }, { signal });
    return {
      id: item.id,
      outcome: r.exitCode === 0 ? "succeeded" : "failed",
      exitCode: r.exitCode,
      signal: r.signal,
      stdout: r.stdout,
      stderr: r.stderr,
      stdoutTruncated: r.stdoutTruncated,
      stderrTruncated: r.stderrTruncated,
      durationMs: r.durationMs,
      error: r.exitCode === 0
        ? null
        : `Exited with ${r.exitCode === null ? `signal ${r.signal}` : `code ${r.exitCode}`}`,
    };
  } catch (error) {
    const timedOut = error instanceof NodeFailure && error.code === "commandTimedOut";
    return {
      ...empty,
      outcome: signal.aborted ? "cancelled" : timedOut ? "timedOut" : "failed",
      durationMs: Date.now() - started,
      error: errorMessage(error, 1000),
    };
  }
}

function checkBatch(
  batch: { items: CommandBatchItem[]; maxConcurrency?: number },
): CommandBatchItem[] {
  const bad = (detail: string): never => {
    throw new RangeError(`Invalid command batch: ${detail}`);
  };
  const items = batch?.items;
  if (!Array.isArray(items) || items.length === 0) bad("items must be a non-empty array");
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
