/**
 * `status` and `list` read through the host a page at a time: every answer fits one protocol
 * message, and a cursor fetches the next page. `status --attempts all` and `list --all` page
 * until the end, so any run and any number of runs can be shown.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  type AttemptSummary,
  MAX_PAGE_ITEMS,
  type RunSummary,
} from "../protocol/run-operations.ts";

export type StatusReceipt = OperationReceipt<"run.status">;

/** One run with its last `attempts` attempts, or every attempt. */
export async function readStatus(
  connection: HostConnection,
  runId: string,
  attempts: number | "all",
  include: { includeUpdates?: boolean; includeNotifications?: boolean } = {},
): Promise<StatusReceipt> {
  // What `include` asks for (latest updates, notifications) comes with the first page.
  if (attempts !== "all") {
    return receiptOf(
      "run.status",
      await connection.request("run.status", {
        runId,
        payload: { attemptLimit: attempts, ...include },
      }),
    );
  }
  let first: StatusReceipt | undefined;
  const all: AttemptSummary[] = [];
  for (let after = 0;;) {
    const page = receiptOf(
      "run.status",
      await connection.request("run.status", {
        runId,
        payload: {
          attemptLimit: MAX_PAGE_ITEMS,
          attemptsAfter: after,
          ...(after === 0 ? include : {}),
        },
      }),
    );
    first ??= page;
    const items = page.attempts ?? [];
    if (items.length === 0) break;
    all.push(...items);
    after = items[items.length - 1].sequence;
  }
  return { ...first, attempts: all, attemptCount: all.length };
}

export interface RunList {
  runs: RunSummary[];
  /** How many runs match, whether shown or not. */
  total: number;
}

/** The newest `limit` runs (null: every one), active only unless `all`. */
export async function readRunList(
  connection: HostConnection,
  all: boolean,
  limit: number | null,
): Promise<RunList> {
  const runs: RunSummary[] = [];
  let total = 0;
  let before: string | undefined;
  for (;;) {
    const want = Math.min(MAX_PAGE_ITEMS, (limit ?? Infinity) - runs.length);
    const page = receiptOf(
      "run.list",
      await connection.request("run.list", {
        payload: { all, limit: want, ...(before !== undefined ? { before } : {}) },
      }),
    );
    runs.push(...page.runs);
    total = page.total ?? runs.length;
    before = page.next;
    if (before === undefined || page.runs.length === 0) break;
    if (limit !== null && runs.length >= limit) break;
  }
  return { runs, total };
}
