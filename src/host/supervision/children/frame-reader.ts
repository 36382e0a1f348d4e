/**
 * A child's fd-3 channel read frame by frame by whoever owns the child now: the worker session
 * of one epoch, then (a prepared child, prepared-children.ts) the validation exchanges and the
 * next epoch's session. Iterating over the stream itself would destroy it when a reader stops
 * early; this reader keeps the stream open across owners. The stream is paused while decoded
 * frames wait (backpressure: nothing is read ahead of the current owner).
 */
import type { Readable } from "node:stream";
import { type Frame, FrameDecoder } from "../../../protocol/framing.ts";
import { followStream } from "../../../protocol/follow-stream.ts";

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
  followStream(stream, {
    chunk(bytes) {
      queue.push(...decoder.push(bytes));
      if (queue.length > 0) {
        stream.pause();
        notify();
      }
    },
    // A child killed while a reply of ours sat unread in its socket makes the kernel reset the
    // channel; the frames it sent before it died come through `chunk` first (follow-stream.ts).
    // A failure ends the frames like an end: the child is gone either way.
    end() {
      ended = true;
      queue.push(...decoder.end());
      notify();
    },
  });

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
