/**
 * Both channel readers (the worker session's `createFrameReader`, and `readFrames` of controller
 * sessions, resolvers and the headless bridge) keep every frame a child wrote before it died, even
 * when the kernel resets the channel (a SIGKILLed child with a reply of ours unread in its socket)
 * while the reader is paused between frames.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import type { Readable, Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { createFrameReader } from "../../../../src/host/supervision/children/frame-reader.ts";
import { readFrames } from "../../../../src/protocol/framing.ts";

// Writes frame 1; on "go" (stdin) writes frame 2 and says so on stdout; never reads fd 3.
const CHILD = `
const fs = require("node:fs");
fs.writeSync(3, '{"n":1}\\n');
process.stdin.once("data", () => {
  fs.writeSync(3, '{"n":2}\\n');
  process.stdout.write("sent\\n");
  setInterval(() => {}, 60_000);
});
`;

let child: ChildProcess | null = null;

afterEach(() => {
  if (child?.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  child = null;
});

function withDeadline<T>(promise: Promise<T>, what: string, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`Timed out waiting for ${what}`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

/** Starts the child; its fd-3 channel. */
function spawnChild(): Readable & Writable {
  child = spawn(process.execPath, ["-e", CHILD], {
    stdio: ["pipe", "pipe", "inherit", "pipe"],
  });
  return child.stdio[3] as Readable & Writable;
}

/** Leaves a reply unread in the child, lets it write frame 2, then SIGKILLs it. */
async function dieWithReplyUnread(channel: Writable): Promise<void> {
  // A reply the child never reads makes its death reset the channel.
  await new Promise<void>((resolve, reject) =>
    channel.write('{"reply":1}\n', (error) => error ? reject(error) : resolve())
  );
  const sent = new Promise<void>((resolve) => {
    let text = "";
    child!.stdout!.on("data", (chunk) => {
      text += String(chunk);
      if (text.includes("sent\n")) resolve();
    });
  });
  child!.stdin!.write("go\n");
  await withDeadline(sent, "the child's second frame");
  const exited = once(child!, "exit");
  child!.kill("SIGKILL");
  await withDeadline(exited, "the child's exit");
}

describe("a child SIGKILLed with a reply unread", () => {
  it("createFrameReader yields the frame it wrote while the reader was paused", async () => {
    const channel = spawnChild();
    const reader = createFrameReader(channel);
    const first = await withDeadline(reader.next(), "frame 1");
    expect(first).toMatchObject({ ok: true, value: { n: 1 } });
    // The reader now holds the stream paused: no one asked for the next frame.
    await dieWithReplyUnread(channel);
    const second = await withDeadline(reader.next(), "frame 2");
    expect(second).toMatchObject({ ok: true, value: { n: 2 } });
    expect(await withDeadline(reader.next(), "the end of the channel")).toBeNull();
  });

  it("readFrames yields the frame it wrote while the loop was paused", async () => {
    const channel = spawnChild();
    const frames = readFrames(channel);
    const first = await withDeadline(frames.next(), "frame 1");
    expect(first.value).toMatchObject({ ok: true, value: { n: 1 } });
    // The generator waits at its yield: the stream is paused.
    await dieWithReplyUnread(channel);
    const second = await withDeadline(frames.next(), "frame 2");
    expect(second.value).toMatchObject({ ok: true, value: { n: 2 } });
    // Then the reset ends the loop (thrown, as any stream error).
    await expect(withDeadline(frames.next(), "the end of the channel")).rejects.toMatchObject({
      code: "ECONNRESET",
    });
  });
});
