/**
 * `status` and `list` read through the host a page at a time: every answer fits one protocol
 * message, and a cursor fetches the next page. `status --attempts all` and `list --all` page
 * until the end, so any run and any number of runs can be shown.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { MAX_PAGE_ITEMS, type RunSummary } from "../protocol/run-operations.ts";

export { readStatus, type StatusReceipt } from "../client/status-read.ts";

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
