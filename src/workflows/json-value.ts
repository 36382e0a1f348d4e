/** Turns a callback's return value into a JSON value that survives a round trip. */
import { Buffer } from "node:buffer";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { fastCanonicalJson } from "../protocol/fast-canonical-json.ts";
import { NodeFailure } from "./errors.ts";

/**
 * Largest output a node may produce: it must fit, with its envelope, in one 1 MiB protocol
 * message and one durable value.
 */
export const MAX_OUTPUT_BYTES = 960 * 1024;

export function toJson(value: unknown, what: string): JsonValue {
  let text: string;
  try {
    // Every node's output passes here: the fast encoder gives the same bytes and, for anything
    // unusual, the general encoder's own error.
    text = fastCanonicalJson(value === undefined ? null : value);
  } catch (error) {
    throw new NodeFailure(
      "outputNotJson",
      `${capitalize(what)} is not JSON: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  if (Buffer.byteLength(text) > MAX_OUTPUT_BYTES) {
    throw new NodeFailure(
      "outputTooLarge",
      `${capitalize(what)} is over 960 KiB of JSON: return less, or store large data in a file`,
    );
  }
  return JSON.parse(text) as JsonValue;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
