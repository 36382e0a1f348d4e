/** Field schemas shared by the socket and worker protocols: ids, revisions, digests, errors. */
import * as v from "valibot";

/** Printable ASCII without spaces, 1-200 characters: request, client, run, message ids. */
export const OpaqueIdSchema = v.pipe(
  v.string(),
  v.regex(/^[\x21-\x7e]{1,200}$/, "Invalid id: expected 1-200 printable ASCII characters"),
);

/** A resource revision: a non-negative safe integer. */
export const RevisionSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

/** A claim generation or host epoch: a positive safe integer. */
export const PositiveIntegerSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(1));

export const CountSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

/** Epoch milliseconds. */
export const TimestampSchema = v.pipe(v.number(), v.safeInteger(), v.minValue(0));

/** `sha256:<64 hex>`, the format `fingerprint()` produces. */
export const DigestSchema = v.pipe(
  v.string(),
  v.regex(/^sha256:[0-9a-f]{64}$/, "Invalid digest: expected sha256:<64 lowercase hex digits>"),
);

/** An absolute POSIX path (the host canonicalizes it further). */
export const AbsolutePathSchema = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(4096),
  v.startsWith("/", "Invalid path: expected an absolute path"),
  v.check((path) => !path.includes("\0"), "Invalid path: contains a NUL character"),
);

/** The longest short text (names, reasons, one-line problems). */
export const MAX_SHORT_TEXT_CHARS = 1000;

/** A bounded single-line text such as a name or reason. */
export const ShortTextSchema = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(MAX_SHORT_TEXT_CHARS),
);

/** A stable machine code plus a bounded one-line message. */
export const ErrorInfoSchema = v.strictObject({
  code: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  message: v.pipe(v.string(), v.maxLength(8192)),
});
export type ErrorInfo = v.InferOutput<typeof ErrorInfoSchema>;

function isPlainRecord(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Refuses arrays before `schema` sees them: valibot's object schemas accept an array as an
 * object with no keys, which would let `[]` pass for `{}` on the wire.
 */
export function nonArray<S extends v.GenericSchema>(schema: S) {
  return v.pipe(
    v.custom<v.InferInput<S>>(
      isPlainRecord,
      (issue) =>
        `Invalid type: Expected Object but received ${
          Array.isArray(issue.input) ? "Array" : issue.received
        }`,
    ),
    schema,
  );
}

/** A strict object (unknown keys refused) that is never an array. */
export function strictObject<E extends v.ObjectEntries>(entries: E) {
  return nonArray(v.strictObject(entries));
}

/** An object that tolerates extra keys (receipts, read by newer clients) and is never an array. */
export function looseObject<E extends v.ObjectEntries>(entries: E) {
  return nonArray(v.object(entries));
}

/**
 * A cross-field rule (`v.check`) that also states its JSON Schema form, so the published schemas
 * (json-schemas.ts) say the rule too instead of leaving it to the host alone.
 */
export function checkWithJsonSchema<T>(
  requirement: (input: T) => boolean,
  message: string,
  jsonSchema: Record<string, unknown>,
) {
  return Object.assign(v.check(requirement, message), { jsonSchema });
}
