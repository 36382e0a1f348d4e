/**
 * The worker's end of the private fd-3 channel: NDJSON frames, one reply per message, correlated
 * by `messageId`. When the host end closes (the host died or stopped us) the worker has no one to
 * propose to, so `onClosed` fires and the worker exits without writing anything anywhere.
 *
 * Under Node the channel starts on the bare descriptor (`hostFd`): the first frame is read and
 * the first frame written with plain blocking reads and writes, and only then (right after the
 * first write, or at the next loop turn after the first frame) is fd 3 handed to a `node:net`
 * socket for the rest. Loading `node:net` and its streams cost ~3 ms of every worker's start-up
 * before `worker.ready`; now that happens while the host commits the ready message. The host
 * writes the first frame right after the spawn, so the blocking read is short; if the host is
 * gone it returns end-of-file at once.
 */
import { Buffer } from "node:buffer";
import { fstatSync, readSync, writeSync } from "node:fs";
import type { Duplex } from "node:stream";
import { encodeFrame, type Frame, FrameDecoder, writeFrame } from "../protocol/framing.ts";

/** How long close() waits for buffered frames to leave before it drops them. */
const CLOSE_FLUSH_MS = 1000;

/** The descriptor the host passes its channel on. */
const HOST_FD = 3;

const UNAVAILABLE =
  "Worker channel unavailable: `pi-workflows worker` is started by the workflow host, not by hand";

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

/** fd 3 as a bare descriptor: the channel reads its first frame from it directly (Node only). */
export interface HostFd {
  fd: number;
}

/** Opens fd 3 as a socket. Throws a clear error when this process was not started by the host. */
export function openHostChannel(fd = HOST_FD): Duplex {
  try {
    return new (net().Socket)({ fd, readable: true, writable: true });
  } catch {
    throw new Error(UNAVAILABLE);
  }
}

/**
 * fd 3 for `createWorkerChannel`: the bare descriptor under Node, a socket elsewhere (Deno).
 * Throws the same clear error as `openHostChannel` when fd 3 is not the host's socket.
 */
export function hostChannel(fd = HOST_FD): Duplex | HostFd {
  if ("Deno" in globalThis) return openHostChannel(fd);
  try {
    if (fstatSync(fd).isSocket()) return { fd };
  } catch {
    // Not open: started by hand.
  }
  throw new Error(UNAVAILABLE);
}

export interface WorkerChannelOptions {
  /**
   * Frames the host sends on its own after the first one (no `messageId`: not a reply), e.g. a
   * controller worker's reconcile assignments. Without it such a frame fails the channel.
   */
  onPush?: (value: unknown) => void;
}

export function createWorkerChannel(
  end: Duplex | HostFd,
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

  // Reading: chunks from the bare descriptor (the first frame) and then from the socket go
  // through one decoder, so a frame split across the two is still whole.
  const decoder = new FrameDecoder();
  let finished = false;
  let stream: Duplex | null = null;
  const finish = (reason: string) => {
    if (finished) return;
    finished = true;
    stream?.destroy();
    waiting.failed?.(new Error(reason));
    closeReason(reason);
  };
  const consume = (frames: Frame[]) => {
    for (const frame of frames) {
      if (finished) return;
      const failure = onFrame(frame);
      if (failure) finish(failure);
    }
  };
  const attach = (socket: Duplex) => {
    stream = socket;
    socket.on(
      "data",
      (chunk: Buffer | string) =>
        consume(decoder.push(typeof chunk === "string" ? Buffer.from(chunk, "utf8") : chunk)),
    );
    socket.on("end", () => {
      consume(decoder.end());
      finish("Worker channel closed by the host");
    });
    socket.on("error", (error) => finish(`Worker channel failed: ${error.message}`));
    socket.on("close", () => finish("Worker channel closed by the host"));
  };

  // The bare descriptor until the socket takes over (Node's start-up path; see the file's top).
  let bare = typeof (end as Duplex).on === "function" ? null : (end as HostFd).fd;
  let handOver: ReturnType<typeof setImmediate> | null = null;
  const takeOver = () => {
    if (bare === null) return;
    const fd = bare;
    bare = null;
    if (handOver) clearImmediate(handOver);
    if (finished) return;
    try {
      attach(new (net().Socket)({ fd, readable: true, writable: true }));
    } catch (error) {
      finish(`Worker channel failed: ${error instanceof Error ? error.message : error}`);
    }
  };
  const readFirstSync = (fd: number) => {
    const buffer = Buffer.allocUnsafe(64 * 1024);
    while (waiting.first && !finished) {
      let bytes: number;
      try {
        bytes = readSync(fd, buffer, 0, buffer.length, null);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === "EINTR") continue;
        // A descriptor that is not blocking after all: the socket reads it.
        if (code === "EAGAIN") return takeOver();
        return finish(`Worker channel failed: ${(error as Error).message}`);
      }
      if (bytes === 0) {
        consume(decoder.end());
        return finish("Worker channel closed by the host");
      }
      consume(decoder.push(buffer.subarray(0, bytes)));
    }
    // Replies and pushes come through the socket; it takes over once the caller's synchronous
    // reaction to this frame (in the run mode: writing worker.ready) is done.
    if (!finished) handOver = setImmediate(takeOver);
  };
  if (bare === null) attach(end as Duplex);

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
  // returns (the crash points after a send rely on that). On the bare descriptor a write blocks
  // until the frame left.
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  const write = (message: unknown): Promise<void> => {
    if (bare !== null) {
      try {
        writeAllSync(bare, encodeFrame(message));
        return Promise.resolve();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "EAGAIN") return Promise.reject(error);
        // Not blocking after all (nothing of the frame left: EAGAIN comes before any byte).
        takeOver();
      }
    }
    const socket = stream;
    if (socket === null) return Promise.reject(new Error("Frame not written: the channel closed"));
    let written: Promise<void>;
    if (queued === 0 && !socket.writableNeedDrain) written = writeFrame(socket, message);
    else {
      queued++;
      written = tail.then(() => {
        queued--;
        return writeFrame(socket, message);
      });
    }
    tail = written.catch(() => {});
    return written;
  };
  return {
    firstFrame: () => {
      if (bare !== null && waiting.first) readFirstSync(bare);
      return firstFrame;
    },
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
      takeOver();
      const socket = stream;
      if (socket === null) return;
      // A frame written just before may still sit in the stream's buffer (a resolver's answer
      // right after its progress frames): end() flushes it; destroy() would drop it. Bounded, in
      // case the host stopped reading.
      const bound = setTimeout(() => socket.destroy(), CLOSE_FLUSH_MS);
      bound.unref();
      socket.once("finish", () => {
        clearTimeout(bound);
        socket.destroy();
      });
      socket.end();
    },
  };
}

/** `node:net`, loaded when the socket is first needed (not at start-up). */
function net(): typeof import("node:net") {
  return process.getBuiltinModule("node:net") as typeof import("node:net");
}

/** Writes all of `bytes` to a blocking descriptor (a write may take part of them). */
function writeAllSync(fd: number, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) {
    try {
      offset += writeSync(fd, bytes, offset, bytes.length - offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EINTR") continue;
      // EAGAIN part-way through would tear a frame: only the first write may fall back.
      if (offset > 0) throw new Error(`Frame not written: ${(error as Error).message}`);
      throw error;
    }
  }
}
