/**
 * How an origin Pi session takes the turns owed to it: `claimTurn` gives the oldest eligible
 * intent of the session under a short lease held by one request (another live lease hides it,
 * so two Pi processes on one session never both start it), `resolveTurn` records the public
 * session entry that started the turn. The text of the turn is the host's to build.
 */
import { hashToken } from "../claims.ts";
import { RefusedError } from "../errors.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll, queryOne } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { heldByOther, OUTBOX_LEASE_MS } from "./notifications.ts";
import { type EntryRecorded, recordOutboxEntry, type SessionEntryTarget } from "./outbox-entry.ts";
import { resolveIntents, type TurnCause, type TurnResolution } from "./turn-intents.ts";

export interface ClaimedTurn {
  turnIntentId: string;
  runId: string;
  cause: TurnCause;
  /** `{prompt}` of a presentation. */
  factsJson: string;
  eligibleAt: number;
}

export interface TurnClaim {
  turn: ClaimedTurn | null;
  /** Eligible intents held by another live lease (adopt them only if already on the branch). */
  leased: { turnIntentId: string; runId: string }[];
}

interface OpenIntentRow {
  intent_id: string;
  run_id: string;
  cause: TurnCause;
  facts_json: string;
  eligible_at: number;
  state: string;
  claim_token_hash: string | null;
  claim_expires_at: number | null;
}

/**
 * Claims the session's oldest eligible intent for the lease `holder`; a run's turn waits until
 * its notifications were shown (they come first, in order). First, in the same
 * transaction, presentations that became eligible before the latest user turn (`userTurnAt`) are
 * `superseded`.
 */
export function claimTurn(
  store: StateStore,
  opts: { sessionId: string; holder: string; userTurnAt?: number; leaseMs?: number },
): TurnClaim {
  // Sessions poll this every second: with nothing owed, no write transaction at all.
  const owed = queryOne(
    store,
    "SELECT 1 AS one FROM turn_intents WHERE target_session_id = :sessionId AND " +
      "state != 'resolved' LIMIT 1",
    { sessionId: opts.sessionId },
  );
  if (owed === undefined) return { turn: null, leased: [] };
  const holderHash = hashToken(opts.holder);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    if (opts.userTurnAt !== undefined) {
      const stale = queryAll<OpenIntentRow>(
        store,
        "SELECT intent_id, state, claim_token_hash, claim_expires_at FROM turn_intents WHERE " +
          "target_session_id = :sessionId AND state != 'resolved' AND cause = 'presentation' " +
          "AND eligible_at IS NOT NULL AND eligible_at < :userTurnAt",
        { sessionId: opts.sessionId, userTurnAt: opts.userTurnAt },
      ).filter((row) => !heldByOther(row, holderHash, now)).map((r) => r.intent_id);
      resolveIntents(store, stale, "superseded", null, now);
    }
    const rows = queryAll<OpenIntentRow>(
      store,
      "SELECT intent_id, run_id, cause, facts_json, eligible_at, state, claim_token_hash, " +
        "claim_expires_at FROM turn_intents t WHERE target_session_id = :sessionId AND " +
        "state != 'resolved' AND eligible_at IS NOT NULL AND NOT EXISTS (SELECT 1 FROM " +
        "notifications n WHERE n.run_id = t.run_id AND n.state != 'delivered' AND " +
        "n.target_session_id = :sessionId) ORDER BY eligible_at, rowid LIMIT 100",
      { sessionId: opts.sessionId },
    );
    const claim: TurnClaim = { turn: null, leased: [] };
    for (const row of rows) {
      if (heldByOther(row, holderHash, now)) {
        claim.leased.push({ turnIntentId: row.intent_id, runId: row.run_id });
      } else if (claim.turn === null) {
        execute(
          store,
          "UPDATE turn_intents SET state = 'claimed', claim_token_hash = :holderHash, " +
            "claim_expires_at = :expiresAt WHERE intent_id = :id",
          {
            holderHash,
            expiresAt: now + (opts.leaseMs ?? OUTBOX_LEASE_MS),
            id: row.intent_id,
          },
        );
        claim.turn = {
          turnIntentId: row.intent_id,
          runId: row.run_id,
          cause: row.cause,
          factsJson: row.facts_json,
          eligibleAt: row.eligible_at,
        };
      }
    }
    return claim;
  });
}

export type TurnResolveResult = EntryRecorded<"turn.resolve">;

/**
 * Records the public session entry of the turn the session started for an eligible intent. Like
 * a delivery, any claimant may record it (adoption after a restart); the same entry again is
 * `adopted`; an intent resolved otherwise is refused (`alreadyResolved`). The run's other
 * unresolved intents stranded before it became due (all of them once the run ended) are covered
 * by this turn and resolved with it.
 */
export function resolveTurn(
  store: StateStore,
  opts: SessionEntryTarget & { turnIntentId: string },
): TurnResolveResult {
  const { turnIntentId, sessionEntryId } = opts;
  return recordOutboxEntry(store, opts, {
    read: () =>
      queryOne<{
        run_id: string;
        target_session_id: string;
        cause: TurnCause;
        eligible_at: number | null;
        state: string;
        resolution: TurnResolution | null;
        session_entry_id: string | null;
      }>(
        store,
        "SELECT run_id, target_session_id, cause, eligible_at, state, resolution, " +
          "session_entry_id FROM turn_intents WHERE intent_id = :id",
        { id: turnIntentId },
      ),
    notFound: { code: "turnNotFound", message: `Unknown turn intent: ${turnIntentId}` },
    wrongSession: `Turn intent ${turnIntentId} belongs to another session`,
    record: (row, now) => {
      const resolution: TurnResolution = row.cause === "presentation" ? "presentation" : "fallback";
      const body = { turnIntentId, resolution, sessionEntryId };
      if (row.state === "resolved") {
        if (row.session_entry_id !== sessionEntryId || row.resolution !== resolution) {
          throw new RefusedError(
            "conflict",
            "alreadyResolved",
            `Turn intent ${turnIntentId} was already resolved (${row.resolution}${
              row.session_entry_id ? `, session entry ${row.session_entry_id}` : ""
            })`,
          );
        }
        return { outcome: "adopted", body };
      }
      if (row.eligible_at === null) {
        throw new RefusedError(
          "rejected",
          "notEligible",
          `Turn intent ${turnIntentId} is not eligible yet: its run has not ended`,
        );
      }
      // Covered: what was stranded before this turn became due, or everything once the run ended.
      const covered = queryAll<{ intent_id: string }>(
        store,
        "SELECT intent_id FROM turn_intents WHERE run_id = :runId AND state != 'resolved' AND " +
          "(created_at <= :eligibleAt OR (SELECT state FROM runs WHERE run_id = :runId) IN " +
          "('completed', 'failed', 'timed_out', 'cancelled'))",
        { runId: row.run_id, eligibleAt: row.eligible_at },
      ).map((r) => r.intent_id);
      resolveIntents(store, covered, resolution, sessionEntryId, now);
      return { outcome: "accepted", body };
    },
  });
}
