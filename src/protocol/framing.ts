/**
 * Bounded NDJSON framing, shared by the host socket, the client and the fd-3 worker channel.
 * One frame is one line of JSON of at most `MAX_FRAME_BYTES` bytes (the newline excluded). The
 * reader never holds more than the bound for one line: once a line passes it, the reader
 * reports `frameTooLarge` and drops the rest of that line as it arrives. Lines are decoded only
 * when complete, so a multibyte character split across chunks is never seen half.
 */
import type { Readable, Writable } from "node:stream";
import { Buffer } from "node:buffer";
import { fastCanonicalJson } from "./fast-canonical-json.ts";
import { followStream } from "./follow-stream.ts";

/** 1 MiB, the spec's message bound (matching the durable event limit). */
export const MAX_FRAME_BYTES = 1024 * 1024;

export const FRAME_ERROR_CODES = [
  "frameTooLarge",
  "invalidUtf8",
  "invalidJson",
  "partialFrame",
] as const;
export type FrameErrorCode = (typeof FRAME_ERROR_CODES)[number];

/** A framing failure. The receiver answers once where it can and closes the connection. */
export class FrameError extends Error {
  readonly code: FrameErrorCode;
  constructor(code: FrameErrorCode, message: string) {
    super(message);
    this.name = "FrameError";
    this.code = code;
  }
}

export type Frame =
  | {
    ok: true;
    value: unknown;
    bytes: number;
    /** The line as received (newline excluded), when the decoder was asked to keep it. */
    line?: Uint8Array;
  }
  | { ok: false; error: FrameError };

export interface FramingOptions {
  /** Bound per frame in bytes; defaults to `MAX_FRAME_BYTES`. Tests may lower it. */
  maxBytes?: number;
}

const NEWLINE = 0x0a;
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Push-style decoder: feed chunks, get complete frames back. Blank lines are skipped. After a
 * `frameTooLarge` error the decoder discards input up to the next newline, then goes on.
 */
export class FrameDecoder {
  readonly #maxBytes: number;
  readonly #keepLines: boolean;
  #parts: Uint8Array[] = [];
  #length = 0;
  #discarding = false;

  /**
   * `keepLines`: each frame carries the bytes it was parsed from (a view into the chunk it came
   * in, so only for readers that are done with a frame soon): the host fingerprints a worker
   * message from them instead of encoding the parsed value again.
   */
  constructor(options: FramingOptions & { keepLines?: boolean } = {}) {
    this.#maxBytes = options.maxBytes ?? MAX_FRAME_BYTES;
    this.#keepLines = options.keepLines ?? false;
  }

  /** Bytes currently held for an unfinished line (never more than the bound). */
  get bufferedBytes(): number {
    return this.#length;
  }

  push(chunk: Uint8Array): Frame[] {
    const frames: Frame[] = [];
    let start = 0;
    while (start < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      if (this.#discarding) {
        if (newline !== -1) this.#discarding = false;
      } else if (this.#length + (end - start) > this.#maxBytes) {
        this.#reset();
        frames.push({ ok: false, error: tooLarge(this.#maxBytes) });
        this.#discarding = newline === -1;
      } else {
        if (end > start) {
          // A finished line is decoded before push returns, so a view is enough; an unfinished
          // tail is copied so the caller's (possibly large) chunk is not kept alive.
          const part = chunk.subarray(start, end);
          this.#parts.push(newline === -1 ? Buffer.from(part) : part);
          this.#length += end - start;
        }
        if (newline !== -1) {
          const frame = this.#finishLine();
          if (frame) frames.push(frame);
        }
      }
      if (newline === -1) break;
      start = newline + 1;
    }
    return frames;
  }

  /** Ends the input: an unfinished line is a `partialFrame` error. */
  end(): Frame[] {
    const partial = this.#length > 0 || this.#discarding;
    this.#reset();
    this.#discarding = false;
    if (!partial) return [];
    return [{
      ok: false,
      error: new FrameError(
        "partialFrame",
        "Frame incomplete: the stream ended before the newline",
      ),
    }];
  }

  #finishLine(): Frame | null {
    const bytes = this.#length;
    const line = this.#parts.length === 1 ? this.#parts[0] : Buffer.concat(this.#parts, bytes);
    this.#reset();
    if (bytes === 0) return null;
    let text: string;
    try {
      text = utf8.decode(line);
    } catch {
      return {
        ok: false,
        error: new FrameError("invalidUtf8", "Frame invalid: the line is not valid UTF-8"),
      };
    }
    if (text.trim() === "") return null;
    try {
      const value: unknown = JSON.parse(text);
      return this.#keepLines ? { ok: true, value, bytes, line } : { ok: true, value, bytes };
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return {
        ok: false,
        error: new FrameError("invalidJson", `Frame invalid: the line is not JSON: ${detail}`),
      };
    }
  }

  #reset(): void {
    this.#parts = [];
    this.#length = 0;
  }
}

function tooLarge(maxBytes: number): FrameError {
  return new FrameError(
    "frameTooLarge",
    `Frame too large: a message may hold at most ${maxBytes} bytes`,
  );
}

/**
 * Reads frames from a stream until it ends. Yields errors as frames (the caller decides whether
 * to answer and close); a stream error ends the iteration by throwing it, after the frames that
 * arrived before it, including those a dying peer left buffered (follow-stream.ts). Stopping
 * early destroys the stream.
 */
export async function* readFrames(
  stream: Readable,
  options: FramingOptions = {},
): AsyncGenerator<Frame, void, undefined> {
  const decoder = new FrameDecoder(options);
  const chunks: Uint8Array[] = [];
  let ended = false;
  let failure = null as { error: unknown } | null;
  let wake: (() => void) | null = null;
  const unfollow = followStream(stream, {
    chunk(bytes) {
      chunks.push(bytes);
      stream.pause();
      wake?.();
    },
    end(error) {
      ended = true;
      if (error !== undefined) failure = { error };
      wake?.();
    },
  });
  try {
    for (;;) {
      const chunk = chunks.shift();
      if (chunk !== undefined) {
        yield* decoder.push(chunk);
        continue;
      }
      if (ended) break;
      await new Promise<void>((resolve) => {
        wake = resolve;
        stream.resume();
      });
      wake = null;
    }
    if (failure !== null) throw failure.error;
    yield* decoder.end();
  } finally {
    if (!ended) stream.destroy();
    unfollow();
  }
}

/**
 * Canonical JSON plus newline as text, or `frameTooLarge` when its UTF-8 passes the bound: for a
 * writer that joins several frames into one write (the host's replies of one group commit to
 * one worker); `encodeFrame` is its bytes.
 */
export function encodeFrameText(value: unknown, options: FramingOptions = {}): string {
  const maxBytes = options.maxBytes ?? MAX_FRAME_BYTES;
  const text = fastCanonicalJson(value);
  // A UTF-16 string of n units never encodes to fewer than n bytes: cheap early refusal.
  if (text.length > maxBytes) throw tooLarge(maxBytes);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: only a long text needs counting.
  if (text.length * 3 > maxBytes && Buffer.byteLength(text, "utf8") > maxBytes) {
    throw tooLarge(maxBytes);
  }
  return `${text}\n`;
}

/** Canonical JSON plus newline, or `frameTooLarge` when the message passes the bound. */
export function encodeFrame(value: unknown, options: FramingOptions = {}): Buffer {
  return Buffer.from(encodeFrameText(value, options), "utf8");
}

/**
 * Corks `stream` until the next tick, unless it is corked already: the frames written meanwhile
 * (the replies one group commit released, whose settles all run in its flush) leave in one write,
 * one system call and one wake-up of the reader, each still after the commit it reports.
 */
export function corkForTick(stream: Writable): void {
  if (stream.writableCorked === 0 && !stream.destroyed) {
    stream.cork();
    process.nextTick(() => stream.uncork());
  }
}

/**
 * Corks `stream` until this event-loop turn is over (the check phase), unless it is corked
 * already: its frames leave after what the turn's promises still write elsewhere (a submit's
 * answer waiting on the same commit), in one write.
 */
export function corkForTurn(stream: Writable): void {
  if (stream.writableCorked === 0 && !stream.destroyed) {
    stream.cork();
    setImmediate(() => stream.uncork());
  }
}

/**
 * Writes one frame and resolves when the stream can take more: when the write buffer is full it
 * waits until the buffer drains or this frame is flushed, so a slow reader slows the writer
 * instead of growing memory. Rejects when the stream fails or closes before the frame left.
 */
export function writeFrame(
  stream: Writable,
  value: unknown,
  options: FramingOptions = {},
): Promise<void> {
  let frame: Buffer;
  try {
    frame = encodeFrame(value, options);
  } catch (error) {
    return Promise.reject(error);
  }
  if (stream.destroyed || stream.writableEnded) {
    return Promise.reject(new Error("Frame not written: the stream is closed"));
  }
  return new Promise<void>((resolve, reject) => {
    let settled = false;
    const settle = (error?: Error | null) => {
      if (settled) return;
      settled = true;
      stream.off("drain", onDrain);
      stream.off("close", onClose);
      if (error) reject(error);
      else resolve();
    };
    const onDrain = () => settle();
    const onClose = () =>
      settle(new Error("Frame not written: the stream closed before the frame was sent"));
    // The callback runs once this frame is flushed (or failed): it also settles a wait for
    // 'drain' that never comes because the peer ended the stream after the data left.
    const ready = stream.write(frame, (error) => settle(error));
    if (ready) {
      settle();
      return;
    }
    stream.on("drain", onDrain);
    stream.on("close", onClose);
  });
}
