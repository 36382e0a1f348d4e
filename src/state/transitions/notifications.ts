/**
 * The notification outbox of notify nodes. A notification is inserted in the transaction that
 * finishes its node's attempt (`recordNodeFinished` with a notification), one per run, node and
 * visit, addressed to the run's origin session. A Pi session then claims the undelivered ones
 * of its session under a short lease held by one request (another live lease hides them from
 * everyone else), shows them, and records the public session entry that shows each one.
 */
import type { NOTIFICATION_KINDS } from "../../protocol/worker-message-payloads.ts";
import { hashToken } from "../claims.ts";
import { RefusedError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { type EntryRecorded, recordOutboxEntry, type SessionEntryTarget } from "./outbox-entry.ts";

export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** A lease holds claimed messages this long; a crashed holder's messages come back after it. */
export const OUTBOX_LEASE_MS = 10_000;

/**
 * Inserts the notification of a notify attempt that is finishing in this transaction (its
 * attempt is already `ok`): `notification_index` is the node's visit number, so a loop visit
 * adds one row per visit and the unique key refuses a second row for one visit.
 */
export function insertNotificationInTx(
  store: StateStore,
  n: { runId: string; attemptId: string; nodeId: string; kind: NotificationKind; message: string },
  now: number,
): string {
  const notificationId = store.ids.next("notification");
  execute(
    store,
    "INSERT INTO notifications (notification_id, run_id, attempt_id, node_id, notification_index, " +
      "target_session_id, kind, message, state, created_at) SELECT :notificationId, :runId, " +
      ":attemptId, :nodeId, (SELECT COUNT(*) FROM node_attempts WHERE run_id = :runId AND " +
      "node_id = :nodeId AND state = 'ok'), (SELECT origin_session_id FROM run_bindings WHERE " +
      "run_id = :runId AND execution_mode = 'interactive'), :kind, :message, 'pending', :now",
    { notificationId, ...n, now },
  );
  return notificationId;
}

export interface ClaimedNotification {
  notificationId: string;
  runId: string;
  workflowName: string;
  nodeId: string;
  kind: NotificationKind;
  message: string;
  createdAt: number;
}

export interface NotificationClaim {
  /** Claimed for this request now, oldest first: show them, then deliver each. */
  notifications: ClaimedNotification[];
  /** Held by another live lease: not to be shown here (but adopted if already on the branch). */
  leased: { notificationId: string; runId: string }[];
}

interface NotificationRow {
  notification_id: string;
  run_id: string;
  workflow_name: string;
  node_id: string;
  kind: NotificationKind;
  message: string;
  state: string;
  claim_token_hash: string | null;
  claim_expires_at: number | null;
  created_at: number;
}

/**
 * Claims the undelivered notifications of `sessionId` (oldest first, at most `limit`) for the
 * lease `holder` (a request identity: a retry of the same request holds the same lease), up to
 * the first one another live lease holds.
 */
export function claimNotifications(
  store: StateStore,
  opts: { sessionId: string; holder: string; limit: number; leaseMs?: number },
): NotificationClaim {
  // Sessions poll this every second: with nothing undelivered, no write transaction at all.
  if (!hasUndelivered(store, opts.sessionId)) return { notifications: [], leased: [] };
  const holderHash = hashToken(opts.holder);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const rows = queryAll<NotificationRow>(
      store,
      "SELECT n.notification_id, n.run_id, r.workflow_name, n.node_id, n.kind, n.message, " +
        "n.state, n.claim_token_hash, n.claim_expires_at, n.created_at FROM notifications n " +
        "JOIN runs r ON r.run_id = n.run_id WHERE n.target_session_id = :sessionId AND " +
        "n.state != 'delivered' ORDER BY n.created_at, n.rowid LIMIT :limit",
      { sessionId: opts.sessionId, limit: opts.limit },
    );
    const claim: NotificationClaim = { notifications: [], leased: [] };
    const expiresAt = now + (opts.leaseMs ?? OUTBOX_LEASE_MS);
    // The session sees its notifications in order: behind one another lease holds (a Pi that
    // died with it claimed), later ones wait until it is adopted or its lease lapses.
    let behindLease = false;
    for (const row of rows) {
      if (heldByOther(row, holderHash, now)) {
        claim.leased.push({ notificationId: row.notification_id, runId: row.run_id });
        behindLease = true;
        continue;
      }
      if (behindLease) continue;
      execute(
        store,
        "UPDATE notifications SET state = 'claimed', claim_token_hash = :holderHash, " +
          "claim_expires_at = :expiresAt WHERE notification_id = :id",
        { holderHash, expiresAt, id: row.notification_id },
      );
      claim.notifications.push({
        notificationId: row.notification_id,
        runId: row.run_id,
        workflowName: row.workflow_name,
        nodeId: row.node_id,
        kind: row.kind,
        message: row.message,
        createdAt: row.created_at,
      });
    }
    return claim;
  });
}

function hasUndelivered(store: StateStore, sessionId: string): boolean {
  return queryOne(
    store,
    "SELECT 1 AS one FROM notifications WHERE target_session_id = :sessionId AND " +
      "state != 'delivered' LIMIT 1",
    { sessionId },
  ) !== undefined;
}

/** A claimed row whose lease is live and belongs to another holder. */
export function heldByOther(
  row: { state: string; claim_token_hash: string | null; claim_expires_at: number | null },
  holderHash: string,
  now: number,
): boolean {
  return row.state === "claimed" && row.claim_token_hash !== holderHash &&
    (row.claim_expires_at ?? 0) > now;
}

export type DeliveryResult = EntryRecorded<"notification.deliver">;

/**
 * Records the public session entry that shows a notification. Any claimant may record it (a Pi
 * process that restarted after showing it adopts its own entry): the same entry again is
 * `adopted`; another entry for a delivered notification is refused (`alreadyDelivered`).
 */
export function deliverNotification(
  store: StateStore,
  opts: SessionEntryTarget & { notificationId: string },
): DeliveryResult {
  const { notificationId, sessionEntryId } = opts;
  return recordOutboxEntry(store, opts, {
    read: () =>
      queryOne<{
        run_id: string;
        target_session_id: string | null;
        state: string;
        session_entry_id: string | null;
        delivered_at: number | null;
      }>(
        store,
        "SELECT run_id, target_session_id, state, session_entry_id, delivered_at FROM " +
          "notifications WHERE notification_id = :id",
        { id: notificationId },
      ),
    notFound: { code: "notificationNotFound", message: `Unknown notification: ${notificationId}` },
    wrongSession: `Notification ${notificationId} is addressed to another session`,
    record: (row, now) => {
      if (row.state === "delivered") {
        if (row.session_entry_id !== sessionEntryId) {
          throw new RefusedError(
            "conflict",
            "alreadyDelivered",
            `Notification ${notificationId} was already delivered as session entry ${row.session_entry_id}`,
          );
        }
        return {
          outcome: "adopted",
          body: { notificationId, sessionEntryId, deliveredAt: row.delivered_at! },
        };
      }
      execute(
        store,
        "UPDATE notifications SET state = 'delivered', session_entry_id = :entry, " +
          "delivered_at = :now, claim_token_hash = NULL, claim_expires_at = NULL " +
          "WHERE notification_id = :id",
        { entry: sessionEntryId, now, id: notificationId },
      );
      return { outcome: "accepted", body: { notificationId, sessionEntryId, deliveredAt: now } };
    },
  });
}
