/**
 * The worker's end of the private fd-3 channel: NDJSON frames, one reply per message, correlated
 * by `messageId`. When the host end closes (the host died or stopped us) the worker has no one to
 * propose to, so `onClosed` fires and the worker exits without writing anything anywhere.
 */
import { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { type Frame, readFrames, writeFrame } from "../protocol/framing.ts";

/** How long close() waits for buffered frames to leave before it drops them. */
const CLOSE_FLUSH_MS = 1000;

export interface WorkerChannel {
  /** The first frame the host sends (the launch envelope); rejects when the channel ends first. */
  firstFrame(): Promise<unknown>;
  /** Sends one message and resolves with the host's reply to its `messageId`. */
  request(message: { messageId: string }): Promise<unknown>;
  /** Sends one frame that expects no reply (the resolver's single answer). */
  send(message: unknown): Promise<void>;
  /** Resolves when the host side closed or the channel failed. */
  closed: Promise<string>;
  close(): void;
}

/** Opens fd 3. Throws a clear error when this process was not started by the host. */
export function openHostChannel(fd = 3): Duplex {
  try {
    return new Socket({ fd, readable: true, writable: true });
  } catch {
    throw new Error(
      "Worker channel unavailable: `pi-workflows worker` is started by the workflow host, not by hand",
    );
  }
}

export interface WorkerChannelOptions {
  /**
   * Frames the host sends on its own after the first one (no `messageId`: not a reply), e.g. a
   * controller worker's reconcile assignments. Without it such a frame fails the channel.
   */
  onPush?: (value: unknown) => void;
}

export function createWorkerChannel(
  stream: Duplex,
  options: WorkerChannelOptions = {},
): WorkerChannel {
  const pending = new Map<string, (reply: unknown) => void>();
  const waiting: {
    first: ((value: unknown) => void) | null;
    failed: ((error: Error) => void) | null;
  } = { first: null, failed: null };
  const firstFrame = new Promise<unknown>((resolve, reject) => {
    waiting.first = resolve;
    waiting.failed = reject;
  });
  firstFrame.catch(() => {});
  let closeReason: (reason: string) => void = () => {};
  const closed = new Promise<string>((resolve) => {
    closeReason = resolve;
  });

  const onFrame = (frame: Frame): string | null => {
    if (!frame.ok) return `Worker channel failed: ${frame.error.message}`;
    if (waiting.first) {
      const deliver = waiting.first;
      waiting.first = null;
      waiting.failed = null;
      deliver(frame.value);
      return null;
    }
    const id = (frame.value as { messageId?: unknown } | null)?.messageId;
    if (id === undefined && options.onPush) {
      options.onPush(frame.value);
      return null;
    }
    const waiter = typeof id === "string" ? pending.get(id) : undefined;
    if (!waiter) return "Worker channel failed: a reply names no pending message";
    pending.delete(id as string);
    waiter(frame.value);
    return null;
  };

  void (async () => {
    let reason = "Worker channel closed by the host";
    try {
      for await (const frame of readFrames(stream)) {
        const failure = onFrame(frame);
        if (failure) {
          reason = failure;
          break;
        }
      }
    } catch (error) {
      reason = `Worker channel failed: ${error instanceof Error ? error.message : error}`;
    }
    waiting.failed?.(new Error(reason));
    closeReason(reason);
  })();

  // One close handler fails every request still waiting (not one handler per request: a long
  // run sends thousands).
  const failed = new Map<string, (error: Error) => void>();
  let closedReason: string | null = null;
  closed.then((reason) => {
    closedReason = reason;
    for (const reject of failed.values()) reject(new Error(reason));
    failed.clear();
  });

  // At most one frame waits for the write buffer to drain; frames sent meanwhile queue behind
  // it, so a window of messages sent ahead adds no listener per frame while the host reads
  // slowly. Otherwise a frame is written at once: it has left this process when request()
  // returns (the crash points after a send rely on that).
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  const write = (message: unknown): Promise<void> => {
    let written: Promise<void>;
    if (queued === 0 && !stream.writableNeedDrain) written = writeFrame(stream, message);
    else {
      queued++;
      written = tail.then(() => {
        queued--;
        return writeFrame(stream, message);
      });
    }
    tail = written.catch(() => {});
    return written;
  };
  return {
    firstFrame: () => firstFrame,
    request(message) {
      return new Promise((resolve, reject) => {
        if (closedReason !== null) {
          reject(new Error(closedReason));
          return;
        }
        const id = message.messageId;
        pending.set(id, (reply) => {
          failed.delete(id);
          resolve(reply);
        });
        failed.set(id, reject);
        const written = write(message);
        written.catch((error) => {
          pending.delete(id);
          failed.delete(id);
          reject(error);
        });
      });
    },
    send: (message) => write(message),
    closed,
    close() {
      // A frame written just before may still sit in the stream's buffer (a resolver's answer
      // right after its progress frames): end() flushes it; destroy() would drop it. Bounded, in
      // case the host stopped reading.
      const bound = setTimeout(() => stream.destroy(), CLOSE_FLUSH_MS);
      bound.unref();
      stream.once("finish", () => {
        clearTimeout(bound);
        stream.destroy();
      });
      stream.end();
    },
  };
}
