/**
 * Encodes one host response as a wire frame: the bytes of the protocol's `encodeFrame` (canonical
 * JSON plus newline, refused past the 1 MiB bound with the same `frameTooLarge` error), through
 * the faster canonical encoder, since every answer the host sends passes here.
 */
import { FrameError, MAX_FRAME_BYTES } from "../protocol/framing.ts";
import { fastCanonicalJson } from "../protocol/fast-canonical-json.ts";

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
  const text = fastCanonicalJson(response);
  // A UTF-16 string of n units never encodes to fewer than n bytes: cheap early refusal.
  if (text.length > maxBytes) throw tooLarge(maxBytes);
  const frame = Buffer.from(`${text}\n`, "utf8");
  if (frame.length - 1 > maxBytes) throw tooLarge(maxBytes);
  return frame;
}

function tooLarge(maxBytes: number): FrameError {
  return new FrameError(
    "frameTooLarge",
    `Frame too large: a message may hold at most ${maxBytes} bytes`,
  );
}
