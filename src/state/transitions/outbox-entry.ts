/**
 * The last step of both outboxes (notifications, turn intents): a Pi session records the public
 * session entry that showed the item. One transaction: the item must exist and be addressed to
 * this session; the caller's `record` adopts the same entry recorded before, refuses another
 * (`conflict`), or records it; the command receipt commits with it.
 */
import type { HostOperation, OperationReceipt } from "../../protocol/host-operations.ts";
import { receiptJson } from "../../protocol/host-response.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { RefusedError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { writeTransaction } from "../transactions.ts";

export interface OutboxItemRow {
  run_id: string;
  target_session_id: string | null;
}

/** Who records which entry, with the command receipt to commit. */
export interface SessionEntryTarget {
  sessionId: string;
  sessionEntryId: string;
  receipt?: CommandReceiptInput;
}

/** The recorded entry: the outcome and the operation's receipt. */
export interface EntryRecorded<Op extends HostOperation> {
  /** `adopted` when the same entry was recorded before. */
  outcome: "accepted" | "adopted";
  body: OperationReceipt<Op>;
}

export function recordOutboxEntry<R extends OutboxItemRow, Op extends HostOperation>(
  store: StateStore,
  target: SessionEntryTarget,
  opts: {
    /** The item, read inside the transaction. */
    read: () => R | undefined;
    /** What a missing item and another session's item are refused with. */
    notFound: { code: string; message: string };
    wrongSession: string;
    record: (row: R, now: number) => EntryRecorded<Op>;
  },
): EntryRecorded<Op> {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const row = opts.read();
    if (!row) throw new RefusedError("notFound", opts.notFound.code, opts.notFound.message);
    if (row.target_session_id !== target.sessionId) {
      throw new RefusedError("rejected", "wrongSession", opts.wrongSession);
    }
    const result = opts.record(row, now);
    if (target.receipt) {
      recordHostCommandInTx(
        store,
        { ...target.receipt, outcome: result.outcome, receipt: receiptJson(result.body) },
        { runId: row.run_id, revision: null, now },
      );
    }
    return result;
  });
}
