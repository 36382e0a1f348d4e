/**
 * One stable client id per Pi session (BOARD decision 2): derived from the session id, so it is
 * the same after a reconnect, a `/reload` and a Pi restart on that session, and idempotency keys
 * the host stored under it still match. Hashed, so the host's command log never holds a session id.
 */
import { createHash } from "node:crypto";

export function sessionClientId(sessionId: string): string {
  const digest = createHash("sha256").update(`pi-workflows.session-client\0${sessionId}`).digest(
    "hex",
  );
  return `pi-session-${digest.slice(0, 32)}`;
}
