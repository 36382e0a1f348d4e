/** The framing over a real fd-3 pipe to a real child process, both directions. */
import { afterEach, describe, expect, test } from "vitest";
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Duplex } from "node:stream";
import { type Frame, readFrames, writeFrame } from "../../src/protocol/framing.ts";
import {
  parseWorkerReply,
  WORKER_LAUNCH_SCHEMA,
  workerMessage,
} from "../../src/protocol/worker-messages.ts";

const fixture = fileURLToPath(new URL("./fixtures/fd3-echo.ts", import.meta.url));
let child: ChildProcess | undefined;

afterEach(() => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  child = undefined;
});

function start(mode = "") {
  child = spawn(process.execPath, [fixture, mode], {
    stdio: ["ignore", "inherit", "inherit", "pipe"],
  });
  const exited = new Promise<number | null>((resolve) => child!.once("exit", resolve));
  return { channel: child.stdio[3] as Duplex, exited };
}

const header = (n: number) => ({
  messageId: `m-${n}`,
  runId: "run-1",
  generation: 1,
  workerEpoch: "we-1",
  attemptId: "att-1",
});

describe("fd-3 channel", () => {
  test("hundreds of messages, some large, one malformed, all answered in order", async () => {
    const { channel, exited } = start();
    const replies: Frame[] = [];
    const reading = (async () => {
      for await (const frame of readFrames(channel)) replies.push(frame);
    })();
    const sent: string[] = [];
    for (let n = 0; n < 300; n++) {
      const data = n % 50 === 0 ? "y".repeat(700_000) : { n };
      const message = n === 7
        ? { schema: WORKER_LAUNCH_SCHEMA, kind: "node.update", ...header(n), payload: { type: "" } }
        : workerMessage("node.update", header(n), { type: "progress", data });
      sent.push(`m-${n}`);
      await writeFrame(channel, message);
    }
    channel.end();
    await reading;
    expect(replies).toHaveLength(300);
    const parsed = replies.map((frame) => {
      if (!frame.ok) throw frame.error;
      const reply = parseWorkerReply(frame.value);
      if (!reply.ok) throw new Error(reply.error);
      return reply.value;
    });
    expect(parsed.map((r) => r.messageId)).toEqual(sent);
    expect(parsed.filter((r) => r.outcome === "rejected").map((r) => r.messageId)).toEqual(["m-7"]);
    expect(parsed[7].error?.message).toMatch(/^payload\.type: /);
    expect(parsed[50].revision).toBeGreaterThan(700_000);
    expect(await exited).toBe(0);
  });

  test("a child that sends a frame past 1 MiB is reported, and the channel goes on", async () => {
    const { channel, exited } = start("oversize");
    const frames: Frame[] = [];
    const reading = (async () => {
      for await (const frame of readFrames(channel)) frames.push(frame);
    })();
    await writeFrame(channel, workerMessage("worker.exiting", header(1), { reason: "finished" }));
    channel.end();
    await reading;
    expect(frames.map((f) => (f.ok ? "ok" : f.error.code))).toEqual(["frameTooLarge", "ok"]);
    expect(await exited).toBe(0);
  });
});
