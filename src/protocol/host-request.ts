/**
 * The request envelope of the host socket, `pi-workflows.host-request.v1`, and its parser. The
 * parser checks the envelope, then the operation's run-id rule, then the payload, and reports the
 * first problem as one line with its field path. Where the envelope carried a usable request id
 * the failure keeps it, so the host can answer `rejected` before it closes the connection.
 */
import * as v from "valibot";
import { fingerprint, MAX_JSON_DEPTH } from "./canonical-json.ts";
import { isCredentialName } from "../base/credential-names.ts";
import {
  OpaqueIdSchema,
  PositiveIntegerSchema,
  RevisionSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";
import {
  HOST_OPERATIONS,
  type HostOperation,
  isHostOperation,
  OPERATION_SPECS,
  type OperationInput,
  type OperationPayload,
} from "./host-operations.ts";
import { describeIssues } from "./schema-issues.ts";

export const HOST_REQUEST_SCHEMA = "pi-workflows.host-request.v1";

/** A client-chosen key that makes a command idempotent across request ids. */
export const IdempotencyKeySchema = v.pipe(
  v.string(),
  v.regex(/^[\x20-\x7e]{1,512}$/, "Invalid idempotency key: expected 1-512 printable characters"),
);

export const HostRequestEnvelopeSchema = strictObject({
  schema: v.literal(HOST_REQUEST_SCHEMA),
  requestId: OpaqueIdSchema,
  clientId: OpaqueIdSchema,
  operation: v.picklist(HOST_OPERATIONS, "Invalid operation: not an operation of the host"),
  runId: v.optional(OpaqueIdSchema),
  expectedRevision: v.optional(RevisionSchema),
  idempotencyKey: v.optional(IdempotencyKeySchema),
  /** The host epoch the client last saw; a request naming an older epoch is rejected. */
  hostEpoch: v.optional(PositiveIntegerSchema),
  /**
   * The client's retry deadline (epoch ms). A state-changing request that first reaches a host
   * after it is refused (`requestExpired`), so a client that gave up knows it was not applied.
   */
  notAfter: v.optional(TimestampSchema),
  payload: v.optional(v.unknown()),
});

interface HostRequestFields {
  schema: typeof HOST_REQUEST_SCHEMA;
  requestId: string;
  clientId: string;
  runId?: string;
  expectedRevision?: number;
  idempotencyKey?: string;
  hostEpoch?: number;
  notAfter?: number;
}

/**
 * The validated request of each operation. Indexed by a generic operation name it stays
 * `OperationPayload<Op>`, so a handler shared by several operations reads their common fields
 * without a cast.
 */
type RequestOf = {
  [Op in HostOperation]: HostRequestFields & { operation: Op; payload: OperationPayload<Op> };
};

/** A validated request; `payload` has the operation's defaults applied. */
export type HostRequest = RequestOf[HostOperation];

/** A validated request of one operation. */
export type OperationRequest<Op extends HostOperation> = RequestOf[Op];

/** `request` as a request of `op`, as dispatch routed it; another operation is a host bug. */
export function requestFor<Op extends HostOperation>(
  request: HostRequest,
  op: Op,
): OperationRequest<Op> {
  if (request.operation !== op) throw new TypeError(`Expected ${op}`);
  return request as OperationRequest<Op>;
}

/** What a client writes: the payload as the operation accepts it, before defaults. */
export type HostRequestInput<Op extends HostOperation = HostOperation> = HostRequestFields & {
  operation: Op;
  payload: OperationInput<Op>;
};

export type ParsedHostRequest =
  | { ok: true; request: HostRequest }
  | {
    ok: false;
    /** `unknownOperation` when the operation is not one of the 21; `invalidRequest` otherwise. */
    code: "invalidRequest" | "unknownOperation";
    /** One line: field path and problem. */
    error: string;
    /** The request id when the envelope carried a usable one, so the error can be answered. */
    requestId?: string;
  };

/** Validates an untrusted decoded frame as a host request. Never throws. */
export function parseHostRequest(value: unknown): ParsedHostRequest {
  const requestId = readRequestId(value);
  try {
    return parseRequest(value, requestId);
  } catch (error) {
    // The schemas recurse (a few frames a level of a JSON value): a frame nested some thousands
    // of levels deep, which JSON.parse takes, overflows the stack. Answer it, keep the host.
    const detail = error instanceof RangeError
      ? `payload: nested too deep to check; keep JSON values within ${MAX_JSON_DEPTH} levels`
      : "payload: could not be checked";
    return fail(detail, requestId);
  }
}

function parseRequest(value: unknown, requestId: string | undefined): ParsedHostRequest {
  const envelope = v.safeParse(HostRequestEnvelopeSchema, value);
  if (!envelope.success) {
    const operation = isRecord(value) ? value.operation : undefined;
    const unknownOperation = operation !== undefined && !isHostOperation(operation);
    return {
      ok: false,
      code: unknownOperation ? "unknownOperation" : "invalidRequest",
      error: describeIssues(envelope.issues),
      requestId,
    };
  }
  const fields = envelope.output;
  const spec = OPERATION_SPECS[fields.operation];
  if (spec.runId === "required" && fields.runId === undefined) {
    return fail(`runId: ${fields.operation} needs the run id`, requestId);
  }
  if (spec.runId === "forbidden" && fields.runId !== undefined) {
    return fail(`runId: ${fields.operation} does not take a run id`, requestId);
  }
  const payload = v.safeParse(spec.payload, fields.payload);
  if (!payload.success) return fail(describeIssues(payload.issues, "payload"), requestId);
  const request = { ...fields, payload: payload.output } as HostRequest;
  return { ok: true, request };
}

function fail(error: string, requestId: string | undefined): ParsedHostRequest {
  return { ok: false, code: "invalidRequest", error, requestId };
}

/** The request id of an untrusted value when it is a well-formed id, else undefined. */
export function readRequestId(value: unknown): string | undefined {
  if (!isRecord(value)) return undefined;
  const result = v.safeParse(OpaqueIdSchema, value.requestId);
  return result.success ? result.output : undefined;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The fingerprint stored with a command receipt. The same request id with the same fingerprint
 * is a retry (answered from the receipt); with another fingerprint it is a conflict. Provider
 * credentials are left out: not even a digest of a secret is stored.
 */
export function requestFingerprint(
  request: Pick<HostRequest, "operation" | "runId" | "expectedRevision" | "idempotencyKey"> & {
    payload: unknown;
  },
): string {
  return fingerprint({
    operation: request.operation,
    runId: request.runId,
    expectedRevision: request.expectedRevision,
    idempotencyKey: request.idempotencyKey,
    payload: withoutCredentials(request.payload),
  });
}

/** `payload` without its `credentials` and without credential-looking `env` variables. */
function withoutCredentials(payload: unknown): unknown {
  if (!isRecord(payload) || !("credentials" in payload || isRecord(payload.env))) return payload;
  const { credentials: _credentials, ...rest } = payload;
  if (!isRecord(rest.env)) return rest;
  const env = Object.fromEntries(
    Object.entries(rest.env).filter(([name]) => !isCredentialName(name)),
  );
  return { ...rest, env };
}
