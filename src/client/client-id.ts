/**
 * Client identity. The host scopes idempotency keys to a client id, so the id must outlive one
 * connection: a client keeps one id across reconnects and host restarts. The CLI uses one per
 * invocation; the Pi extension derives one per Pi session (`stableClientId`), which also
 * survives a Pi restart, without putting the session id itself on the wire.
 */
import { randomUUID } from "node:crypto";
import { sha256Hex } from "../protocol/canonical-json.ts";

const CLIENT_ID = /^[\x21-\x7e]{1,200}$/;

/** A fresh random client id (one per client object or CLI invocation). */
export function newClientId(): string {
  return `client-${randomUUID()}`;
}

/**
 * The same client id for the same `scope` every time (for example `pi-session:<sessionId>`).
 * Only a digest of the scope is sent.
 */
export function stableClientId(scope: string): string {
  if (scope === "") throw new TypeError("stableClientId needs a non-empty scope");
  return `client-${sha256Hex(scope).slice(0, 40)}`;
}

/** Throws a one-line `TypeError` unless `clientId` fits the protocol's id rule. */
export function checkClientId(clientId: string): string {
  if (!CLIENT_ID.test(clientId)) {
    throw new TypeError(
      "Invalid clientId: expected 1-200 printable ASCII characters without spaces",
    );
  }
  return clientId;
}
