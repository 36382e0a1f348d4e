/**
 * Serves the host socket: one bounded NDJSON reader per connection, requests handled
 * concurrently (a slow command never blocks another client, and a client may pipeline), one
 * response per request. A framing or validation failure answers once where it can and closes
 * only that connection. Per-connection limits keep a hostile or stuck client from holding
 * unbounded memory: at most `maxInFlight` unanswered requests (reading pauses beyond that), a
 * deadline for an unfinished frame, and a cap on connections.
 */
import net from "node:net";
import { FrameDecoder, FrameError } from "../protocol/framing.ts";
import type { HostLog } from "./host-log.ts";
import { encodeResponseFrame } from "./response-frame.ts";
import { logError } from "./host-log.ts";

/** What the command layer decides for one parsed frame. */
export interface HandledFrame {
  response: unknown;
  /** Close the connection after this response (validation failure). */
  close: boolean;
}

export interface SocketServerOptions {
  /** Handles one complete JSON frame; never throws (errors become responses). */
  handle(value: unknown): HandledFrame | Promise<HandledFrame>;
  /** The one response to a frame that could not be decoded. */
  frameRejected(error: FrameError): unknown;
  /** A response that could not be encoded (too large): what to send instead. */
  responseFailed(response: unknown, error: Error): unknown;
  log: HostLog;
  /** Unanswered requests per connection before reading pauses. */
  maxInFlight?: number;
  /** How long a started frame may stay unfinished before the connection is closed. */
  partialFrameMs?: number;
  /** Connections served at once; more get `busy`'s one answer and are closed on arrival. */
  maxConnections?: number;
  /** The one answer to a connection over `maxConnections`. */
  busy(maxConnections: number): unknown;
  /** How long a closing connection keeps reading (and dropping) what the peer still sends. */
  lingerMs?: number;
  /** How many bytes a closing connection drops before it gives up on the peer. */
  lingerBytes?: number;
}

export interface SocketServer {
  server: net.Server;
  connectionCount(): number;
  /**
   * Stops taking connections and ends the open ones once their answers are written. With
   * `abandon`, the listening socket is left open (the process is about to exit): closing it would
   * unlink the socket path, which after a claim loss may already belong to the next host.
   */
  close(options?: { abandon?: boolean }): Promise<void>;
}

export function createSocketServer(options: SocketServerOptions): SocketServer {
  const limits: ConnectionLimits = {
    maxInFlight: options.maxInFlight ?? 32,
    partialFrameMs: options.partialFrameMs ?? 10_000,
    lingerMs: options.lingerMs ?? 2_000,
    lingerBytes: options.lingerBytes ?? 16 * 1024 * 1024,
  };
  const maxConnections = options.maxConnections ?? 128;
  const connections = new Set<Connection>();
  let abandoned = false;
  // Half-open: a client that ends its side after a request still gets the answer.
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    if (abandoned) {
      socket.destroy();
      return;
    }
    if (connections.size >= maxConnections) {
      options.log("socket.refused", { reason: "tooManyConnections" });
      // One answer so the client can say "busy" rather than "no host"; then the connection ends.
      socket.on("error", () => socket.destroy());
      socket.resume(); // what the client sends meanwhile is dropped
      socket.end(encodeResponseFrame(options.busy(maxConnections)));
      setTimeout(() => socket.destroy(), limits.lingerMs).unref();
      return;
    }
    const connection = serveConnection(socket, options, limits, () => {
      connections.delete(connection);
    });
    connections.add(connection);
  });
  server.on("error", (error) => options.log("socket.error", { code: errorCode(error) }));
  return {
    server,
    connectionCount: () => connections.size,
    close: async (closeOptions = {}) => {
      abandoned = true;
      const closed = closeOptions.abandon
        ? Promise.resolve()
        : new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all([...connections].map((connection) => connection.drainAndClose()));
      await closed;
    },
  };
}

interface Connection {
  drainAndClose(): Promise<void>;
}

interface ConnectionLimits {
  maxInFlight: number;
  partialFrameMs: number;
  lingerMs: number;
  lingerBytes: number;
}

function serveConnection(
  socket: net.Socket,
  options: SocketServerOptions,
  { maxInFlight, partialFrameMs, lingerMs, lingerBytes }: ConnectionLimits,
  onClosed: () => void,
): Connection {
  const decoder = new FrameDecoder();
  let inFlight = 0;
  let closing = false;
  let ended = false;
  let rejected = false;
  let partialTimer: NodeJS.Timeout | null = null;
  let lingerTimer: NodeJS.Timeout | null = null;
  let idleWaiters: (() => void)[] = [];

  const settleIdle = () => {
    if (inFlight > 0) return;
    for (const resolve of idleWaiters) resolve();
    idleWaiters = [];
  };

  const stopReading = () => {
    closing = true;
    clearPartialTimer();
    socket.pause();
    socket.removeListener("data", onData);
  };

  // Closing with the peer's bytes unread resets the connection: a peer still writing (the rest of
  // an oversized frame, requests pipelined after a bad one) then fails that write, and its runtime
  // drops our answer unread. So our side ends after the answers (FIN), and whatever the peer still
  // sends is read and dropped until it ends too, within a deadline and a byte cap.
  const closeAfterWrites = () => {
    if (ended) return;
    ended = true;
    stopReading();
    const destroy = () => socket.destroy();
    lingerTimer = setTimeout(destroy, lingerMs);
    lingerTimer.unref();
    let flushed = false;
    let dropped = 0;
    const doneWhenBothEnded = () => {
      if (flushed && socket.readableEnded) destroy();
    };
    socket.on("data", (chunk: Buffer) => {
      dropped += chunk.length;
      if (dropped > lingerBytes) destroy();
    });
    socket.on("end", doneWhenBothEnded);
    socket.resume();
    socket.end(() => {
      flushed = true;
      doneWhenBothEnded();
    });
  };

  // Encodes and writes at once; returns a promise only when the socket's buffer is full
  // (backpressure), so the common answer costs no promise at all.
  const send = (response: unknown): Promise<void> | undefined => {
    if (socket.destroyed || socket.writableEnded) return undefined;
    let frame: Buffer;
    try {
      frame = encodeResponseFrame(response);
    } catch (error) {
      if (!(error instanceof FrameError)) throw error;
      frame = encodeResponseFrame(options.responseFailed(response, error));
    }
    return socket.write(frame) ? undefined : drained(socket);
  };

  const clearPartialTimer = () => {
    if (partialTimer) clearTimeout(partialTimer);
    partialTimer = null;
  };

  const rejectFrame = (error: FrameError) => {
    rejected = true;
    options.log("socket.frameRejected", { code: error.code });
    stopReading();
    void Promise.resolve(send(options.frameRejected(error))).finally(closeAfterWrites);
  };

  /** Sends one answer; a promise only while it waits for the socket to drain. */
  const answer = ({ response, close }: HandledFrame): Promise<void> | undefined => {
    if (close) {
      rejected = true;
      stopReading();
    }
    const sent = send(response);
    if (!close) return sent;
    if (sent) return sent.then(closeAfterWrites);
    closeAfterWrites();
    return undefined;
  };

  const handlerFailed = (error: unknown) => {
    // `handle` answers every error itself; reaching here is a bug, so close this client only.
    options.log("socket.handlerError", { error: logError(error) });
    socket.destroy();
  };

  // While one chunk's frames are being dispatched, idleness waits for the whole chunk: a drain
  // that starts meanwhile (host.stop) must still answer the frames after it.
  let dispatching = false;
  const answered = () => {
    inFlight--;
    if (!closing && inFlight < maxInFlight) socket.resume();
    if (!dispatching) settleIdle();
  };

  const dispatch = (value: unknown) => {
    inFlight++;
    if (inFlight >= maxInFlight) socket.pause();
    // Reads answer synchronously: no promise is made unless the handler or the socket waits.
    let pending: Promise<void> | undefined;
    try {
      const handled = options.handle(value);
      pending = handled instanceof Promise ? handled.then(answer) : answer(handled);
    } catch (error) {
      handlerFailed(error);
    }
    if (pending) void pending.catch(handlerFailed).finally(answered);
    else answered();
  };

  function onData(chunk: Buffer) {
    if (closing) return;
    // Frames already received are answered even when a drain starts meanwhile (host.stop in the
    // same chunk); after a rejected frame nothing more from this peer is read.
    dispatching = true;
    try {
      for (const frame of decoder.push(chunk)) {
        if (rejected) return;
        if (frame.ok) dispatch(frame.value);
        else return rejectFrame(frame.error);
      }
    } finally {
      dispatching = false;
      settleIdle();
    }
    if (closing) return;
    if (decoder.bufferedBytes > 0) {
      partialTimer ??= setTimeout(() => {
        partialTimer = null;
        if (!closing) {
          rejectFrame(
            new FrameError(
              "partialFrame",
              `Frame incomplete: no newline within ${partialFrameMs} ms`,
            ),
          );
        }
      }, partialFrameMs);
    } else {
      clearPartialTimer();
    }
  }

  socket.on("data", onData);
  socket.on("end", () => {
    if (closing) return;
    const [last] = decoder.end();
    if (last && !last.ok) return rejectFrame(last.error);
    // The peer finished sending; answer what is in flight, then close our side.
    closing = true;
    void new Promise<void>((resolve) => {
      idleWaiters.push(resolve);
      settleIdle();
    }).then(closeAfterWrites);
  });
  socket.on("error", () => {
    // Peer resets are ordinary; the close handler cleans up.
  });
  socket.on("close", () => {
    clearPartialTimer();
    if (lingerTimer) clearTimeout(lingerTimer);
    onClosed();
  });

  return {
    drainAndClose: () =>
      new Promise<void>((resolve) => {
        if (socket.destroyed) return resolve();
        socket.once("close", () => resolve());
        stopReading();
        idleWaiters.push(closeAfterWrites);
        settleIdle();
      }),
  };
}

function errorCode(error: unknown): string {
  return (error as NodeJS.ErrnoException)?.code ?? "unknown";
}

/** Resolves when the socket drained its write buffer, or closed. */
function drained(socket: net.Socket): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      socket.off("drain", done);
      socket.off("close", done);
      resolve();
    };
    socket.on("drain", done);
    socket.on("close", done);
  });
}
