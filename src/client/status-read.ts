/**
 * `run.status` a page at a time: every answer fits one protocol message, and the attempt cursor
 * fetches the next page, so `status --attempts all` (and the test kit) can show any run whole.
 */
import type { OperationReceipt } from "../protocol/host-operations.ts";
import { type AttemptSummary, MAX_PAGE_ITEMS } from "../protocol/run-operations.ts";
import { receiptOf } from "./command-receipt.ts";
import type { HostConnection } from "./host-connection.ts";

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
