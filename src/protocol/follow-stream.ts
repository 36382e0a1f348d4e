/**
 * Follows a readable byte stream for a frame reader (`readFrames`, the host's per-child
 * `createFrameReader`): each chunk as it arrives, then one end, including the bytes a dying peer
 * left behind.
 *
 * When a peer dies with data of ours unread, the kernel resets the connection and Node destroys
 * the stream with what it had read (while the reader paused it) still buffered: the last frames
 * the peer sent. Async iteration and 'data' alone drop them; they are taken here with `read()`
 * on 'end', 'close' or 'error', before the end is reported.
 */
import type { Readable } from "node:stream";
import { Buffer } from "node:buffer";

export interface StreamFollower {
  /** A chunk of the stream, in order; may be called while the stream is paused only at its end. */
  chunk(bytes: Buffer): void;
  /** Once, after the last `chunk`: the stream ended or closed, or failed with `error`. */
  end(error?: unknown): void;
}

/**
 * Starts following `stream` (which puts it in flowing mode; the follower may pause it). Returns
 * the function that stops following: it removes the listeners, leaving a no-op 'error' listener
 * when none other remains, since a destroyed stream may still report errors.
 */
export function followStream(stream: Readable, follower: StreamFollower): () => void {
  let ended = false;
  let draining = false;
  const bytes = (chunk: Buffer | string) =>
    typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk;
  const onData = (chunk: Buffer | string) => {
    // read() below emits 'data' for what it returns; that is taken from its return value.
    if (!draining) follower.chunk(bytes(chunk));
  };
  const finish = (error?: unknown) => {
    if (ended) return;
    ended = true;
    draining = true;
    for (let chunk = stream.read(); chunk !== null; chunk = stream.read()) {
      follower.chunk(bytes(chunk));
    }
    follower.end(error);
  };
  const onEnd = () => finish();
  stream.on("data", onData);
  stream.once("end", onEnd);
  stream.once("close", onEnd);
  // Every error, not just the first: a killed peer can fail a write and a read, and an 'error'
  // with no listener would throw.
  stream.on("error", finish);
  // A stream that ended before anyone read it emits nothing more.
  if (stream.destroyed || stream.readableEnded) finish();
  return () => {
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("close", onEnd);
    stream.off("error", finish);
    if (stream.listenerCount("error") === 0) stream.on("error", () => {});
  };
}
