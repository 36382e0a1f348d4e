import { describe, expect, test } from "vitest";
import { PassThrough } from "node:stream";
import { followStream } from "../../src/protocol/follow-stream.ts";

/** Follows `stream`, pausing it at every chunk as a frame reader does between frames. */
function record(stream: PassThrough) {
  const seen: string[] = [];
  const unfollow = followStream(stream, {
    chunk(bytes) {
      seen.push(`chunk ${bytes.toString("utf8")}`);
      stream.pause();
    },
    end(error) {
      seen.push(error === undefined ? "end" : `end ${(error as Error).message}`);
    },
  });
  return { seen, unfollow };
}

/** Resolves once the stream has emitted `event` (a deadline guards the wait). */
function emitted(stream: PassThrough, event: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`Timed out waiting for ${event}`)), 5_000);
    stream.once(event, () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

describe("followStream()", () => {
  test("hands over what a paused stream still held when it is destroyed, then the error", async () => {
    const stream = new PassThrough();
    const { seen } = record(stream);
    const paused = emitted(stream, "pause");
    stream.write("one");
    await paused;
    // Paused by the follower: these stay in the stream's buffer, as a dying peer's last frames.
    stream.write("two");
    stream.write("three");
    const closed = emitted(stream, "close");
    stream.destroy(new Error("reset"));
    await closed;
    expect(seen.join("|")).toBe("chunk one|chunk two|chunk three|end reset");
  });

  test("a plain end is reported once, without an error", async () => {
    const stream = new PassThrough();
    const { seen } = record(stream);
    const closed = emitted(stream, "close");
    stream.end("last");
    stream.resume();
    await closed;
    expect(seen).toEqual(["chunk last", "end"]);
  });

  test("a stream destroyed before it was followed ends at once, with what it held", () => {
    const stream = new PassThrough();
    stream.write("left");
    stream.destroy();
    const { seen } = record(stream);
    expect(seen).toEqual(["chunk left", "end"]);
  });

  test("stopping leaves a listener for the errors a destroyed stream still reports", async () => {
    const stream = new PassThrough();
    const { seen, unfollow } = record(stream);
    unfollow();
    expect(stream.listenerCount("error")).toBe(1);
    expect(stream.listenerCount("data")).toBe(0);
    const closed = emitted(stream, "close");
    stream.destroy(new Error("late"));
    await closed;
    expect(seen).toEqual([]);
  });
});
