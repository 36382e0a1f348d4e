/**
 * A hand-written check for the most frequent request, a plain `run.status` (no payload fields:
 * what a poller sends). It answers "valid" (the request exactly as `parseHostRequest` would
 * return it) or "not sure" (undefined), never "invalid": anything else goes through the valibot
 * schemas, which stay the reference and word the errors. `test/protocol/host-request-fast.test.ts`
 * holds the two to the same verdicts.
 */
import { HOST_REQUEST_SCHEMA, type HostRequest } from "./host-request.ts";

const ID = /^[\x21-\x7e]{1,200}$/;
const KEYS = new Set([
  "schema",
  "requestId",
  "clientId",
  "operation",
  "runId",
  "hostEpoch",
  "payload",
]);

export function fastPlainRunStatus(value: unknown): HostRequest | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return undefined;
  const m = value as Record<string, unknown>;
  if (m.operation !== "run.status" || m.schema !== HOST_REQUEST_SCHEMA) return undefined;
  for (const key of Object.keys(m)) if (!KEYS.has(key)) return undefined;
  const { requestId, clientId, runId, hostEpoch, payload } = m;
  if (typeof requestId !== "string" || !ID.test(requestId)) return undefined;
  if (typeof clientId !== "string" || !ID.test(clientId)) return undefined;
  if (typeof runId !== "string" || !ID.test(runId)) return undefined;
  if (
    hostEpoch !== undefined &&
    !(typeof hostEpoch === "number" && Number.isSafeInteger(hostEpoch) && hostEpoch >= 1)
  ) {
    return undefined;
  }
  if (
    typeof payload !== "object" || payload === null || Array.isArray(payload) ||
    Object.keys(payload).length !== 0
  ) {
    return undefined;
  }
  const request: HostRequest = {
    schema: HOST_REQUEST_SCHEMA,
    requestId,
    clientId,
    operation: "run.status",
    runId,
    payload: {},
  };
  if (hostEpoch !== undefined) request.hostEpoch = hostEpoch as number;
  return request;
}

/** True for a `run.status` payload that asks for nothing beyond the plain answer. */
export function isPlainStatusPayload(payload: object | undefined): boolean {
  if (payload === undefined) return true;
  for (const key in payload) {
    if ((payload as Record<string, unknown>)[key] !== undefined) return false;
  }
  return true;
}
