/**
 * Taking over expired claims, the same way for every kind a host leases (a run's, a reconcile's):
 * each expired claim not held by this host gets a fresh claim of this host through its kind's
 * recover transition. Claim loss is a handoff: nothing here writes a failure.
 */
import type { HostContext } from "./host-context.ts";

/**
 * Takes over every expired claim in `ids` not in `skip` with a fresh claim of this host, through
 * the kind's `recover` transition; an error `handedOff` accepts means another owner was first.
 * Returns how many were recovered (logged as `event`).
 */
export function recoverExpiredClaims(
  ctx: HostContext,
  ids: readonly string[],
  kind: {
    skip: ReadonlySet<string>;
    event: string;
    recover(id: string, claim: { ownerId: string; token: string; ttlMs: number }): void;
    handedOff(error: unknown): boolean;
  },
): number {
  let recovered = 0;
  for (const id of ids) {
    if (kind.skip.has(id)) continue;
    try {
      kind.recover(id, {
        ownerId: ctx.hostOwnerId,
        token: ctx.ids.token(),
        ttlMs: ctx.options.claimTtlMs,
      });
      recovered++;
    } catch (error) {
      if (!kind.handedOff(error)) throw error;
    }
  }
  if (recovered > 0) ctx.log(kind.event, { count: recovered });
  return recovered;
}
