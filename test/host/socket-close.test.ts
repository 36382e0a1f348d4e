/**
 * How the socket server closes a connection it rejected. The race under test: the host answers
 * `frameTooLarge` and closes while the client is still writing the rest of its frame. If the host
 * closes with the client's bytes unread, the client's next write fails (EPIPE) and Node destroys
 * its socket before it read the answer. Here the client writes again only after the host has
 * flushed its answer (the server socket's `finish`), which is when that loss happened every time.
 */
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createSocketServer, type SocketServer } from "../../src/host/socket-server.ts";
import { FrameDecoder, MAX_FRAME_BYTES } from "../../src/protocol/framing.ts";
import { waitFor } from "../support/wait.ts";

let dir: string;
let socketPath: string;
let served: SocketServer;
/** The server side of each accepted connection, in order. */
const accepted: net.Socket[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "pwf-socket-close-"));
  socketPath = join(dir, "host.sock");
  served = createSocketServer({
    handle: (value) => ({ response: { echo: value }, close: false }),
    frameRejected: (error) => ({ outcome: "rejected", error: { code: error.code } }),
    responseFailed: () => ({ outcome: "rejected" }),
    busy: () => ({ outcome: "unavailable" }),
    log: () => {},
    lingerMs: 1500,
    lingerBytes: 4 * MAX_FRAME_BYTES,
  });
  served.server.on("connection", (socket) => accepted.push(socket));
  await new Promise<void>((resolve) => served.server.listen(socketPath, resolve));
});

afterAll(async () => {
  await served?.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Peer {
  socket: net.Socket;
  server: net.Socket;
  frames: unknown[];
  error: NodeJS.ErrnoException | null;
  closed: Promise<void>;
}

/** A client that does not read until told to (`socket.resume()`), like one busy writing. */
async function connectPaused(): Promise<Peer> {
  const index = accepted.length;
  const socket = net.connect(socketPath);
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  socket.pause();
  await waitFor(() => accepted.length > index, "the server to accept the connection", 10_000, 5);
  const peer: Peer = {
    socket,
    server: accepted[index],
    frames: [],
    error: null,
    closed: new Promise((resolve) => socket.once("close", () => resolve())),
  };
  const decoder = new FrameDecoder();
  socket.on("data", (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) peer.frames.push(frame.ok ? frame.value : frame);
  });
  socket.on("error", (error) => (peer.error = error));
  return peer;
}

function write(socket: net.Socket, data: string): Promise<void> {
  return new Promise((resolve) => socket.write(data, () => resolve()));
}

function flushed(socket: net.Socket): Promise<void> {
  return socket.writableFinished ? Promise.resolve() : new Promise((r) => socket.once("finish", r));
}

describe("socket server: closing a rejected connection", () => {
  it("a client still writing its oversized frame reads the frameTooLarge answer", async () => {
    const peer = await connectPaused();
    // One byte past the bound: the host answers and ends its side.
    void write(peer.socket, "x".repeat(MAX_FRAME_BYTES + 1));
    await flushed(peer.server);
    await new Promise((resolve) => setImmediate(resolve));
    // The rest of the frame, written after the host answered: it must not reset the connection.
    await write(peer.socket, "x".repeat(MAX_FRAME_BYTES));
    peer.socket.resume();
    await peer.closed;
    expect(peer.frames).toEqual([{ outcome: "rejected", error: { code: "frameTooLarge" } }]);
    expect(peer.error).toBeNull();
  });

  it("a peer that keeps writing past the byte cap is cut off", async () => {
    const peer = await connectPaused();
    peer.socket.resume();
    const chunk = "x".repeat(256 * 1024);
    const started = Date.now();
    while (!peer.socket.destroyed && Date.now() - started < 10_000) await write(peer.socket, chunk);
    await peer.closed;
    expect(peer.frames).toEqual([{ outcome: "rejected", error: { code: "frameTooLarge" } }]);
    // Cut off by the cap (4 MiB past the frame), well before the 1.5 s deadline at this rate.
    expect(peer.error?.code).toMatch(/EPIPE|ECONNRESET/);
  });

  it("a peer that neither reads nor closes is closed at the deadline", async () => {
    const peer = await connectPaused();
    await write(peer.socket, "x".repeat(MAX_FRAME_BYTES + 1));
    const serverClosed = new Promise((resolve) => peer.server.once("close", resolve));
    const started = Date.now();
    await serverClosed;
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    peer.socket.destroy();
  });

  it("an ordinary client is answered and the connection closes when it ends", async () => {
    const peer = await connectPaused();
    peer.socket.resume();
    peer.socket.end('{"a":1}\n');
    await peer.closed;
    expect(peer.frames).toEqual([{ echo: { a: 1 } }]);
    expect(served.connectionCount()).toBe(0);
  });
});
