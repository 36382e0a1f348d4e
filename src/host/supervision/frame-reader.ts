/**
 * A child's fd-3 channel read frame by frame by whoever owns the child now: the worker session
 * of one epoch, then (a prepared child, prepared-children.ts) the validation exchanges and the
 * next epoch's session. Iterating over the stream itself would destroy it when a reader stops
 * early; this reader keeps the stream open across owners. The stream is paused while decoded
 * frames wait (backpressure: nothing is read ahead of the current owner).
 */
import type { Readable } from "node:stream";
import { Buffer } from "node:buffer";
import { type Frame, FrameDecoder } from "../../protocol/framing.ts";

export interface FrameReader {
  /** The next frame, or null once the stream ended (or failed). */
  next(): Promise<Frame | null>;
  /** Frames until the stream ends; stopping the loop early leaves the stream open. */
  frames(): AsyncGenerator<Frame, void, undefined>;
}

export function createFrameReader(stream: Readable): FrameReader {
  // Lines kept: the worker session fingerprints a message from its bytes (worker-session.ts).
  const decoder = new FrameDecoder({ keepLines: true });
  const queue: Frame[] = [];
  let ended = false;
  let wake: (() => void) | null = null;
  const notify = () => {
    const resolve = wake;
    wake = null;
    resolve?.();
  };
  let draining = false;
  const decode = (chunk: Buffer | string) => {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
    queue.push(...decoder.push(bytes));
  };
  stream.on("data", (chunk: Buffer | string) => {
    if (draining) return; // taken from read()'s return value below
    decode(chunk);
    if (queue.length > 0) {
      stream.pause();
      notify();
    }
  });
  const finish = () => {
    if (ended) return;
    ended = true;
    // A child killed while a reply of ours sat unread in its socket makes the kernel reset the
    // channel, and the stream is destroyed with what it read while paused still buffered:
    // frames the child sent before it died. They are taken here, or they would be lost.
    draining = true;
    for (let chunk = stream.read(); chunk !== null; chunk = stream.read()) decode(chunk);
    queue.push(...decoder.end());
    notify();
  };
  stream.once("end", finish);
  stream.once("close", finish);
  // Every error, not just the first: a killed child can fail a write and a read, and an
  // 'error' with no listener would throw in the host.
  stream.on("error", finish);
  // A stream that ended before anyone read it emits nothing more.
  if (stream.destroyed || stream.readableEnded) finish();

  const next = async (): Promise<Frame | null> => {
    for (;;) {
      const frame = queue.shift();
      if (frame) return frame;
      if (ended) return null;
      await new Promise<void>((resolve) => {
        wake = resolve;
        stream.resume();
      });
    }
  };
  return {
    next,
    async *frames() {
      for (;;) {
        const frame = await next();
        if (frame === null) return;
        yield frame;
      }
    },
  };
}
