/**
 * The local protocol as JSON Schema (draft 2020-12), generated from the valibot schemas that
 * validate the wire, so the published files cannot say something the host does not check.
 * `pi-workflows schema` prints them and `schemas/` in the package holds the same bytes (a test
 * regenerates and compares).
 *
 * What JSON Schema cannot say is left to the host: cross-field checks written as `v.check`
 * (e.g. a success response carries a receipt and no error) and the non-finite numbers JSON
 * cannot encode anyway. The schemas are therefore a little looser than the host, never stricter.
 */
import { type ConversionConfig, type JsonSchema, toJsonSchemaDefs } from "@valibot/to-json-schema";
import type * as v from "valibot";
import { AnswerSchemaSchema } from "./answer-schema.ts";
import { PresentationBlockSchema } from "./decision-request.ts";
import {
  CONTROLLER_RESOLVE_REQUEST_SCHEMA,
  CONTROLLER_RESOLVE_RESULT_SCHEMA,
  ControllerResolveRequestSchema,
  ControllerResolveResultSchema,
} from "./controller-resolve.ts";
import {
  CONTROLLER_LAUNCH_SCHEMA,
  CONTROLLER_PAYLOAD_SCHEMAS,
  CONTROLLER_PUSH_SCHEMA,
  ControllerHeaderSchema,
  ControllerLaunchSchema,
  ControllerPushSchema,
  RECONCILE_KINDS,
} from "./controller-worker.ts";
import { HOST_OPERATIONS, OPERATION_SPECS } from "./host-operations.ts";
import { HOST_REQUEST_SCHEMA, HostRequestEnvelopeSchema } from "./host-request.ts";
import { HOST_RESPONSE_SCHEMA, HostResponseSchema } from "./host-response.ts";
import {
  RESOLVE_REQUEST_SCHEMA,
  RESOLVE_RESULT_SCHEMA,
  ResolveRequestSchema,
  ResolveResultSchema,
} from "./resolve-messages.ts";
import { RESOLVE_PROGRESS_SCHEMA, ResolveProgressSchema } from "./resolve-progress.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { VALIDATE_REQUEST_SCHEMA, ValidateRequestSchema } from "./validate-messages.ts";
import { WORKER_LAUNCH_SCHEMA, WorkerLaunchSchema } from "./worker-launch.ts";
import { ATTEMPT_KINDS, WORKER_PAYLOAD_SCHEMAS } from "./worker-message-payloads.ts";
import { WorkerHeaderSchema } from "./worker-messages.ts";
import { WORKER_REPLY_SCHEMA, WorkerReplySchema } from "./worker-reply.ts";

const DRAFT = "https://json-schema.org/draft/2020-12/schema";
const ID_BASE = "https://osolmaz.github.io/pi-workflows/schemas/";

/** Recursive shapes become shared definitions instead of being expanded. */
const SHARED = {
  JsonValue: JsonValueSchema,
  AnswerSchema: AnswerSchemaSchema,
  PresentationBlock: PresentationBlockSchema,
};

const CONFIG: ConversionConfig = {
  target: "draft-2020-12",
  // Our pipes start with a non-array guard and end with the object schema: convert the object.
  typeMode: "output",
  // Anything else the converter cannot express is a bug in this file, not a silent gap.
  errorMode: "throw",
  // JSON numbers are finite anyway.
  ignoreActions: ["finite"],
  // A check states its JSON Schema form (checkWithJsonSchema) or stays the host's alone.
  overrideAction({ valibotAction, jsonSchema }) {
    if (valibotAction.type !== "check") return undefined;
    const stated = (valibotAction as { jsonSchema?: JsonSchema }).jsonSchema;
    return stated === undefined ? jsonSchema : { ...jsonSchema, allOf: [stated] };
  },
};

type Schemas = Record<string, v.GenericSchema<unknown, unknown>>;

function defsOf(schemas: Schemas): Record<string, JsonSchema> {
  // A lazy schema's body gets a numbered definition that its name only points to: refer to the
  // body by the name instead, and store it under the name, so the files read
  // `#/$defs/JsonValue` rather than `#/$defs/0`.
  const numbered = new Map<string, string>();
  const defs = toJsonSchemaDefs({ ...SHARED, ...schemas } as never, {
    ...CONFIG,
    overrideRef({ referenceId, valibotSchema, getterMap }) {
      for (const [name, lazy] of Object.entries(SHARED)) {
        // The converter unwraps each lazy schema once per run and keeps the body by getter.
        const getter = (lazy as unknown as v.LazySchema<v.GenericSchema>).getter;
        if (getterMap.get(getter) !== valibotSchema) continue;
        numbered.set(referenceId, name);
        return `#/$defs/${name}`;
      }
      return undefined;
    },
  }) as Record<string, JsonSchema>;
  for (const [id, name] of numbered) {
    defs[name] = defs[id];
    delete defs[id];
  }
  return defs;
}

function published(
  file: string,
  title: string,
  root: string,
  defs: Record<string, JsonSchema>,
  extra: Record<string, unknown> = {},
  keep: readonly string[] = [],
): JsonSchema {
  const body = { ...(defs[root] as object), ...extra };
  return {
    $schema: DRAFT,
    $id: ID_BASE + file,
    title,
    ...body,
    $defs: reachableDefs([body, ...keep.map((name) => ({ $ref: `#/$defs/${name}` }))], defs, root),
  } as JsonSchema;
}

/** The definitions `body` refers to, directly or through other definitions (not `root`). */
function reachableDefs(
  body: unknown,
  defs: Record<string, JsonSchema>,
  root: string,
): Record<string, JsonSchema> {
  const seen = new Set<string>();
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(visit);
    if (typeof value !== "object" || value === null) return;
    for (const [key, inner] of Object.entries(value)) {
      if (key === "$ref" && typeof inner === "string" && inner.startsWith("#/$defs/")) {
        const name = inner.slice("#/$defs/".length);
        if (!seen.has(name) && name !== root && name in defs) {
          seen.add(name);
          visit(defs[name]);
        }
      } else visit(inner);
    }
  };
  visit(body);
  return Object.fromEntries(Object.keys(defs).filter((n) => seen.has(n)).map((n) => [n, defs[n]]));
}

function hostRequest(): JsonSchema {
  const payloads = Object.fromEntries(
    HOST_OPERATIONS.map((op) => [`${op}.payload`, OPERATION_SPECS[op].payload]),
  );
  const defs = defsOf({ HostRequest: HostRequestEnvelopeSchema, ...payloads });
  const variants = HOST_OPERATIONS.map((op) => {
    const spec = OPERATION_SPECS[op];
    // `runId: true` names the property a variant requires (its shape is the envelope's);
    // `runId: false` refuses it where the operation takes no run.
    const variant: Record<string, unknown> = {
      properties: {
        operation: { const: op },
        payload: { $ref: `#/$defs/${op}.payload` },
        runId: spec.runId === "required",
      },
    };
    const required = payloadRequired(spec.payload) ? ["payload"] : [];
    if (spec.runId === "required") required.push("runId");
    if (required.length > 0) variant.required = required;
    return variant;
  });
  return published("host-request.v1.json", HOST_REQUEST_SCHEMA, "HostRequest", defs, {
    description: "A request frame on the host socket: one JSON object per line (NDJSON). " +
      "`payload` follows the operation; `$defs/<operation>.payload` is each operation's payload.",
    oneOf: variants,
  });
}

/** A payload that may be left out (its schema accepts `undefined`, usually with a default). */
function payloadRequired(schema: v.GenericSchema<unknown, unknown>): boolean {
  const wrapper = schema as { type?: string };
  return wrapper.type !== "optional" && wrapper.type !== "undefinedable";
}

function hostResponse(): JsonSchema {
  const receipts = Object.fromEntries(
    HOST_OPERATIONS.map((op) => [`${op}.receipt`, OPERATION_SPECS[op].receipt]),
  );
  const defs = defsOf({ HostResponse: HostResponseSchema, ...receipts });
  return published("host-response.v1.json", HOST_RESPONSE_SCHEMA, "HostResponse", defs, {
    description: "A response frame on the host socket. `accepted` and `adopted` carry `receipt` " +
      "(its shape: `$defs/<operation>.receipt`) and no `error`; every other outcome carries `error`.",
  }, Object.keys(receipts));
}

/** A channel's messages: one header, and per kind a payload (some kinds need one more field). */
function kindedMessages(
  file: string,
  title: string,
  description: string,
  header: v.GenericSchema<unknown, unknown>,
  payloads: Record<string, v.GenericSchema<unknown, unknown>>,
  extra: { kinds: ReadonlySet<string>; field: string },
): JsonSchema {
  const kinds = Object.keys(payloads);
  const defs = defsOf({
    Message: header,
    ...Object.fromEntries(kinds.map((kind) => [`${kind}.payload`, payloads[kind]])),
  });
  const variants = kinds.map((kind) => {
    const needs = extra.kinds.has(kind);
    return {
      properties: {
        kind: { const: kind },
        payload: { $ref: `#/$defs/${kind}.payload` },
        ...(needs ? { [extra.field]: true } : {}),
      },
      required: needs ? ["payload", extra.field] : ["payload"],
    };
  });
  return published(file, title, "Message", defs, { description, oneOf: variants });
}

function single(
  file: string,
  title: string,
  schema: v.GenericSchema<unknown, unknown>,
  description: string,
): JsonSchema {
  return published(file, title, "Root", defsOf({ Root: schema }), { description });
}

/** Every published schema by file name, in a stable order. */
export function protocolJsonSchemas(): Record<string, JsonSchema> {
  return {
    "host-request.v1.json": hostRequest(),
    "host-response.v1.json": hostResponse(),
    "worker-launch.v1.json": single(
      "worker-launch.v1.json",
      WORKER_LAUNCH_SCHEMA,
      WorkerLaunchSchema,
      "The first frame the host writes to a worker on fd 3: which run, generation and source.",
    ),
    "worker-message.v1.json": kindedMessages(
      "worker-message.v1.json",
      WORKER_LAUNCH_SCHEMA,
      "A message a run worker proposes to the host over its private fd-3 channel.",
      WorkerHeaderSchema,
      WORKER_PAYLOAD_SCHEMAS,
      { kinds: ATTEMPT_KINDS, field: "attemptId" },
    ),
    "worker-reply.v1.json": single(
      "worker-reply.v1.json",
      WORKER_REPLY_SCHEMA,
      WorkerReplySchema,
      "The host's answer to one worker message, correlated by messageId.",
    ),
    "resolve-request.v1.json": single(
      "resolve-request.v1.json",
      RESOLVE_REQUEST_SCHEMA,
      ResolveRequestSchema,
      "The host's request to a resolver child (`worker --resolve`).",
    ),
    "resolve-result.v1.json": single(
      "resolve-result.v1.json",
      RESOLVE_RESULT_SCHEMA,
      ResolveResultSchema,
      "A resolver child's one answer.",
    ),
    "resolve-progress.v1.json": single(
      "resolve-progress.v1.json",
      RESOLVE_PROGRESS_SCHEMA,
      ResolveProgressSchema,
      "A step a resolver child starts (sent before its answer, so a crash or hang names it).",
    ),
    "validate-request.v1.json": single(
      "validate-request.v1.json",
      VALIDATE_REQUEST_SCHEMA,
      ValidateRequestSchema,
      "The host's request to a validation child (`worker --validate`).",
    ),
    "controller-launch.v1.json": single(
      "controller-launch.v1.json",
      CONTROLLER_LAUNCH_SCHEMA,
      ControllerLaunchSchema,
      "The first frame the host writes to a controller worker (`worker --controller`) on fd 3.",
    ),
    "controller-push.v1.json": single(
      "controller-push.v1.json",
      CONTROLLER_PUSH_SCHEMA,
      ControllerPushSchema,
      "A frame the host sends a controller worker on its own: a reconcile assigned or aborted.",
    ),
    "controller-message.v1.json": kindedMessages(
      "controller-message.v1.json",
      CONTROLLER_LAUNCH_SCHEMA,
      "A message a controller worker proposes to the host; answered like a run worker's.",
      ControllerHeaderSchema,
      CONTROLLER_PAYLOAD_SCHEMAS,
      { kinds: RECONCILE_KINDS, field: "reconcileId" },
    ),
    "controller-resolve-request.v1.json": single(
      "controller-resolve-request.v1.json",
      CONTROLLER_RESOLVE_REQUEST_SCHEMA,
      ControllerResolveRequestSchema,
      "The host's request to a controller resolver child (`worker --resolve-controller`).",
    ),
    "controller-resolve-result.v1.json": single(
      "controller-resolve-result.v1.json",
      CONTROLLER_RESOLVE_RESULT_SCHEMA,
      ControllerResolveResultSchema,
      "A controller resolver child's answer.",
    ),
  };
}

/** The text written for one schema file: two-space JSON and a final newline. */
export function schemaFileText(schema: JsonSchema): string {
  return `${JSON.stringify(schema, null, 2)}\n`;
}
