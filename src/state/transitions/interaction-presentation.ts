/**
 * `presentInteraction`: the Pi session records which public session entry presents its current
 * step (compare-and-set, so a restarted session adopts the entry instead of presenting twice).
 */
import type { OperationReceipt } from "../../protocol/host-operations.ts";
import { RefusedError } from "../errors.ts";
import { currentSessionInteraction } from "../interaction-queries.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import {
  type InteractionTarget,
  requirePending,
  requireWaitingRun,
  waitingRunWrite,
} from "./waiting-run-write.ts";

/** The receipt of `interaction.present`, which is also what the transition returns. */
type PresentReceipt = OperationReceipt<"interaction.present">;

export interface PresentInteractionOptions extends InteractionTarget {
  sessionEntryId: string;
  /** The stored entry id this one replaces (null: none was recorded yet). */
  replaces?: string | null;
}

/**
 * Records the public session entry id of the message presenting the request
 * (`interaction.presented`). Compare-and-set: the stored id must equal `replaces` (null when none
 * yet); an equal id is idempotent (nothing changes). Only the session's current request.
 */
export function presentInteraction(
  store: StateStore,
  opts: PresentInteractionOptions,
): { revision: number; result: PresentReceipt } {
  return waitingRunWrite<PresentReceipt, PresentReceipt>(store, opts, (request, run) => {
    requirePending(request);
    requireWaitingRun(run, "present a step of");
    const current = currentSessionInteraction(store, opts.sessionId);
    if (current?.request.request_id !== request.request_id) {
      throw new RefusedError(
        "rejected",
        "notCurrent",
        `Interactive request ${request.request_id} is not this session's current step; present ${
          current?.request.request_id ?? "nothing"
        } first`,
      );
    }
  }, ({ now, request }) => {
    const stored = request.presentation_entry_id;
    const body = (entryId: string, at: number): PresentReceipt => ({
      interactionId: request.request_id,
      sessionEntryId: entryId,
      presentedAt: at,
    });
    if (stored === opts.sessionEntryId) {
      const at = request.presented_at ?? now;
      return { entry: null, result: body(stored, at), body: body(stored, at) };
    }
    if (stored !== (opts.replaces ?? null)) {
      throw new RefusedError(
        "conflict",
        "presentationConflict",
        `Step already presented as session entry ${stored}: adopt it, or pass replaces: ${
          JSON.stringify(stored)
        } to present it again`,
      );
    }
    execute(
      store,
      "UPDATE interactive_requests SET presentation_entry_id = :entry, presented_at = :now, " +
        "claimed_at = COALESCE(claimed_at, :now) WHERE request_id = :id",
      { entry: opts.sessionEntryId, now, id: request.request_id },
    );
    return {
      entry: {
        type: "interaction.presented",
        payload: { interactionId: request.request_id, replaced: stored !== null },
        summary: { state: "waiting", nodeId: request.node_id, presented: true },
      },
      result: body(opts.sessionEntryId, now),
      body: body(opts.sessionEntryId, now),
    };
  });
}
