/**
 * Encodes one host response as a wire frame: the protocol's `encodeFrame` (canonical JSON plus
 * newline, refused past the 1 MiB bound with `frameTooLarge`), or the bytes already encoded for
 * that response object.
 */
import { encodeFrame, MAX_FRAME_BYTES } from "../protocol/framing.ts";

/** Responses whose frame was already encoded (the cached `run.status` answer). */
const preEncoded = new WeakMap<object, Buffer>();

/** Attaches `frame` as the encoding of `response` (its exact `encodeResponseFrame` bytes). */
export function withEncodedFrame<T extends object>(response: T, frame: Buffer): T {
  preEncoded.set(response, frame);
  return response;
}

export function encodeResponseFrame(response: unknown, maxBytes = MAX_FRAME_BYTES): Buffer {
  const encoded = typeof response === "object" && response !== null
    ? preEncoded.get(response)
    : undefined;
  if (encoded !== undefined && encoded.length - 1 <= maxBytes) return encoded;
  return encodeFrame(response, { maxBytes });
}
