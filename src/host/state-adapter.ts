/**
 * State functions the host needs that the state layer does not export yet (requested in
 * /work/coord/requests.md). Each one is replaced by a re-export once it lands; SQL stays in
 * src/state.
 */
import type { StateStore } from "../state/store.ts";
import type { StoredHostCommand } from "../state/host-commands.ts";

/** The receipt of an earlier command with this client's idempotency key, if any. */
export function findCommandByKey(
  _store: StateStore,
  _key: { clientId: string; operation: string; idempotencyKey: string },
): StoredHostCommand | undefined {
  return undefined;
}
