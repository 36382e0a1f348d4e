/**
 * The response envelope of the host socket, `pi-workflows.host-response.v1`: one per request,
 * correlated by `requestId`. `accepted` and `adopted` (a stored receipt returned again) carry a
 * receipt; every other outcome carries an error with a stable code and a one-line message.
 */
import * as v from "valibot";
import { DecodedJsonSchema, JsonValueSchema } from "./run-facts.ts";
import type { JsonValue } from "./canonical-json.ts";
import {
  checkWithJsonSchema,
  ErrorInfoSchema,
  nonArray,
  OpaqueIdSchema,
  PositiveIntegerSchema,
  RevisionSchema,
  strictObject,
} from "./fields.ts";
import type { ErrorInfo } from "./fields.ts";
import { type HostOperation, OPERATION_SPECS, type OperationReceipt } from "./host-operations.ts";
import { parseWith, type SchemaResult } from "./schema-issues.ts";

export const HOST_RESPONSE_SCHEMA = "pi-workflows.host-response.v1";

export const HOST_OUTCOMES = [
  "accepted",
  "adopted",
  "rejected",
  "conflict",
  "notFound",
  "claimLost",
  "unavailable",
] as const;
export type HostOutcome = (typeof HOST_OUTCOMES)[number];

/** Outcomes that mean the command took effect (now, or earlier under the same request). */
export const SUCCESS_OUTCOMES: ReadonlySet<HostOutcome> = new Set(["accepted", "adopted"]);

/**
 * Error codes the host uses in `error.code`. Framing codes come from framing.ts; failure classes
 * from failures.ts may also appear (e.g. `claimLost`, `sourceChanged`).
 */
export const HOST_ERROR_CODES = {
  invalidRequest: "invalidRequest",
  unknownOperation: "unknownOperation",
  notAvailable: "notAvailable",
  requestIdReused: "requestIdReused",
  revisionMismatch: "revisionMismatch",
  staleEpoch: "staleEpoch",
  requestExpired: "requestExpired",
  runNotFound: "runNotFound",
  hostStopping: "hostStopping",
  hostBusy: "hostBusy",
  /** The state directory's disk is full: the command was not recorded; reads still work. */
  diskFull: "diskFull",
  internal: "internal",
} as const;

/** The envelope's fields, with `receiptValue` for each value of a receipt. */
function responseFields<T extends v.GenericSchema>(receiptValue: T) {
  return strictObject({
    schema: v.literal(HOST_RESPONSE_SCHEMA),
    /** Null only when the offending frame had no usable request id (the connection then closes). */
    requestId: v.nullable(OpaqueIdSchema),
    outcome: v.picklist(HOST_OUTCOMES),
    /** The resource revision after the command, or the current one on `conflict`. */
    revision: v.optional(RevisionSchema),
    receipt: v.optional(nonArray(v.record(v.string(), receiptValue))),
    error: v.optional(ErrorInfoSchema),
    hostEpoch: PositiveIntegerSchema,
  });
}

/** Success outcomes carry a receipt and no error, the others an error. */
function outcomeCarriesItsBody<
  T extends { outcome: HostOutcome; receipt?: unknown; error?: unknown },
>() {
  return checkWithJsonSchema<T>(
    (r) =>
      SUCCESS_OUTCOMES.has(r.outcome)
        ? r.receipt !== undefined && r.error === undefined
        : r.error !== undefined,
    "Invalid response: accepted and adopted carry a receipt and no error; other outcomes carry an error",
    {
      if: { properties: { outcome: { enum: [...SUCCESS_OUTCOMES] } } },
      then: { required: ["receipt"], not: { required: ["error"] } },
      else: { required: ["error"] },
    },
  );
}

const HostResponseFieldsSchema = responseFields(JsonValueSchema);

export const HostResponseSchema: v.GenericSchema<unknown, HostResponse> = v.pipe(
  HostResponseFieldsSchema,
  outcomeCarriesItsBody<v.InferOutput<typeof HostResponseFieldsSchema>>(),
);

const DecodedFieldsSchema = responseFields(DecodedJsonSchema);

/**
 * The same envelope as a client checks a decoded frame: every value of a JSON.parse result is
 * JSON already, so the receipt's values are not walked here (on a run's status, most of a
 * response's cost in Pi's process); its operation's receipt schema checks them (`parseReceipt`).
 */
const DecodedHostResponseSchema: v.GenericSchema<unknown, HostResponse> = v.pipe(
  DecodedFieldsSchema,
  outcomeCarriesItsBody<v.InferOutput<typeof DecodedFieldsSchema>>(),
);

export interface HostResponse {
  schema: typeof HOST_RESPONSE_SCHEMA;
  requestId: string | null;
  outcome: HostOutcome;
  revision?: number;
  receipt?: { [key: string]: JsonValue };
  error?: ErrorInfo;
  hostEpoch: number;
}

/** Validates an untrusted decoded frame (a JSON.parse result) as a host response. */
export function parseHostResponse(value: unknown): SchemaResult<HostResponse> {
  return parseWith(DecodedHostResponseSchema, value);
}

/** Validates the receipt of a successful response against its operation's receipt schema. */
export function parseReceipt<Op extends HostOperation>(
  operation: Op,
  receipt: unknown,
): SchemaResult<OperationReceipt<Op>> {
  return parseWith(OPERATION_SPECS[operation].receipt, receipt, "receipt") as SchemaResult<
    OperationReceipt<Op>
  >;
}

/** A success response (`accepted`, or `adopted` for a stored receipt returned again). */
export function successResponse(fields: {
  requestId: string;
  hostEpoch: number;
  receipt: { [key: string]: JsonValue };
  revision?: number;
  adopted?: boolean;
}): HostResponse {
  return {
    schema: HOST_RESPONSE_SCHEMA,
    requestId: fields.requestId,
    outcome: fields.adopted ? "adopted" : "accepted",
    revision: fields.revision,
    receipt: fields.receipt,
    hostEpoch: fields.hostEpoch,
  };
}

/**
 * The success response to `request`, its receipt typed by the operation's receipt schema: how the
 * host answers every operation it accepts (`successResponse` builds the envelope).
 */
export function receiptResponse<Op extends HostOperation>(
  request: { operation: Op; requestId: string },
  hostEpoch: number,
  receipt: OperationReceipt<Op>,
  options: { revision?: number; adopted?: boolean } = {},
): HostResponse {
  return successResponse({
    requestId: request.requestId,
    hostEpoch,
    receipt: receiptJson(receipt),
    ...options,
  });
}

/**
 * A typed receipt as the JSON the host stores and sends. A receipt schema's output is JSON by
 * construction (every field is a JSON schema), so this only changes the static type.
 */
export function receiptJson<Op extends HostOperation>(
  receipt: OperationReceipt<Op>,
): { [key: string]: JsonValue } {
  return receipt as { [key: string]: JsonValue };
}

/** A failure response with a stable code and a one-line message. */
export function failureResponse(fields: {
  requestId: string | null;
  hostEpoch: number;
  outcome: Exclude<HostOutcome, "accepted" | "adopted">;
  code: string;
  message: string;
  revision?: number;
}): HostResponse {
  return {
    schema: HOST_RESPONSE_SCHEMA,
    requestId: fields.requestId,
    outcome: fields.outcome,
    revision: fields.revision,
    error: { code: fields.code, message: fields.message },
    hostEpoch: fields.hostEpoch,
  };
}
