import { afterEach, describe, expect, test } from "vitest";
import net from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { PassThrough } from "node:stream";
import { Writable } from "node:stream";
import {
  corkForTurn,
  encodeFrame,
  encodeFrameText,
  type Frame,
  FrameDecoder,
  FrameError,
  MAX_FRAME_BYTES,
  readFrames,
  writeFrame,
} from "../../src/protocol/framing.ts";
import { fingerprint, sha256Hex } from "../../src/protocol/canonical-json.ts";

const bytes = (text: string) => Buffer.from(text, "utf8");
const values = (frames: Frame[]) => frames.map((f) => (f.ok ? f.value : f.error.code));

describe("FrameDecoder", () => {
  test("decodes several frames in one chunk and skips blank lines", () => {
    const decoder = new FrameDecoder();
    expect(values(decoder.push(bytes('{"a":1}\n\n[2]\n  \n"x"\n')))).toEqual([{ a: 1 }, [2], "x"]);
    expect(decoder.end()).toEqual([]);
  });

  test("a frame split at every byte offset decodes the same", () => {
    const line = bytes('{"text":"héllo wörld 🚀 ✓","n":[1,2,3]}\n');
    for (let cut = 0; cut <= line.length; cut++) {
      const decoder = new FrameDecoder();
      const frames = [...decoder.push(line.subarray(0, cut)), ...decoder.push(line.subarray(cut))];
      expect(values(frames), `cut at ${cut}`).toEqual([{ text: "héllo wörld 🚀 ✓", n: [1, 2, 3] }]);
    }
  });

  test("multibyte characters fed one byte at a time", () => {
    const line = bytes('"日本語 🎉 émoji"\n');
    const decoder = new FrameDecoder();
    const frames: Frame[] = [];
    for (const byte of line) frames.push(...decoder.push(Uint8Array.of(byte)));
    expect(values(frames)).toEqual(["日本語 🎉 émoji"]);
  });

  test("exactly 1 MiB is a frame; 1 MiB + 1 is frameTooLarge", () => {
    const exact = bytes(`"${"a".repeat(MAX_FRAME_BYTES - 2)}"\n`);
    expect(exact.length).toBe(MAX_FRAME_BYTES + 1);
    const decoder = new FrameDecoder();
    const ok = decoder.push(exact);
    expect(ok).toHaveLength(1);
    expect(ok[0].ok && (ok[0].value as string).length).toBe(MAX_FRAME_BYTES - 2);

    const over = bytes(`"${"a".repeat(MAX_FRAME_BYTES - 1)}"\n{"next":true}\n`);
    expect(values(decoder.push(over))).toEqual(["frameTooLarge", { next: true }]);
  });

  test("the bound holds when the line and its newline arrive in separate chunks", () => {
    const body = bytes(`"${"b".repeat(MAX_FRAME_BYTES - 2)}"`);
    const feed = (decoder: FrameDecoder, data: Uint8Array) => {
      const out: Frame[] = [];
      for (let at = 0; at < data.length; at += 65_536) {
        out.push(...decoder.push(data.subarray(at, at + 65_536)));
      }
      return out;
    };
    const exact = new FrameDecoder();
    expect(feed(exact, body)).toEqual([]);
    expect(exact.bufferedBytes).toBe(MAX_FRAME_BYTES);
    expect(values(exact.push(bytes("\n")))).toHaveLength(1);

    const over = new FrameDecoder();
    expect(feed(over, body)).toEqual([]);
    expect(values(over.push(bytes(" ")))).toEqual(["frameTooLarge"]);
    expect(over.bufferedBytes).toBe(0);
    expect(values(over.push(bytes('\n{"after":1}\n')))).toEqual([{ after: 1 }]);
  });

  test("an oversized line arriving in chunks is never buffered past the bound", () => {
    const decoder = new FrameDecoder({ maxBytes: 1000 });
    const results: Frame[] = [];
    let peak = 0;
    for (let i = 0; i < 50; i++) {
      results.push(...decoder.push(bytes("x".repeat(97))));
      peak = Math.max(peak, decoder.bufferedBytes);
    }
    expect(peak).toBeLessThanOrEqual(1000);
    expect(decoder.bufferedBytes).toBe(0);
    expect(values(results)).toEqual(["frameTooLarge"]);
    // The rest of the oversized line is dropped up to its newline, then decoding resumes.
    expect(values(decoder.push(bytes('tail of the big line\n{"b":2}\n')))).toEqual([{ b: 2 }]);
  });

  test("a never-finished frame is a partialFrame error at end", () => {
    const decoder = new FrameDecoder();
    expect(decoder.push(bytes('{"a":1}\n{"unfinished":'))).toHaveLength(1);
    expect(values(decoder.end())).toEqual(["partialFrame"]);
    expect(decoder.end()).toEqual([]);
  });

  test("garbage: not JSON, invalid UTF-8, then a good frame", () => {
    const decoder = new FrameDecoder();
    const chunk = Buffer.concat([
      bytes("hello world\n{bad json}\n"),
      Uint8Array.of(0x22, 0xff, 0xfe, 0x22, 0x0a),
      bytes('{"fine":true}\n'),
    ]);
    const frames = decoder.push(chunk);
    expect(values(frames)).toEqual(["invalidJson", "invalidJson", "invalidUtf8", { fine: true }]);
    const error = (frames[0] as { error: FrameError }).error;
    expect(error).toBeInstanceOf(FrameError);
    expect(error.message).toMatch(/^Frame invalid: the line is not JSON: /);
    expect(error.message).not.toContain("\n");
  });

  test("keepLines: each frame carries its own bytes, whatever the chunking", () => {
    // The host fingerprints a worker message from these bytes: for a frame written by
    // encodeFrame (canonical JSON) that is exactly fingerprint(message).
    const messages = [{ b: "héllo 🚀", a: [1, { z: null, y: true }] }, { kind: "x", n: 2 }, "s"];
    const stream = Buffer.concat(messages.map((m) => encodeFrame(m)));
    for (let cut = 0; cut <= stream.length; cut += 7) {
      const decoder = new FrameDecoder({ keepLines: true });
      const frames = [
        ...decoder.push(stream.subarray(0, cut)),
        ...decoder.push(stream.subarray(cut)),
      ];
      expect(values(frames), `cut at ${cut}`).toEqual(messages);
      frames.forEach((frame, i) => {
        const line = frame.ok ? frame.line : undefined;
        expect(line && `sha256:${sha256Hex(line)}`, `cut at ${cut}`).toBe(fingerprint(messages[i]));
      });
    }
    expect(new FrameDecoder().push(stream)[0]).not.toHaveProperty("line");
  });
});

describe("encodeFrame()", () => {
  test("canonical JSON and one newline", () => {
    expect(encodeFrame({ b: 1, a: [true, null] }).toString("utf8")).toBe(
      '{"a":[true,null],"b":1}\n',
    );
  });

  test("refuses a message past the bound, counting UTF-8 bytes", () => {
    expect(encodeFrame("a".repeat(MAX_FRAME_BYTES - 2)).length).toBe(MAX_FRAME_BYTES + 1);
    expect(() => encodeFrame("a".repeat(MAX_FRAME_BYTES - 1))).toThrow(/^Frame too large/);
    // 3 bytes per character: passes the length check, fails the byte check.
    expect(() => encodeFrame("€".repeat(400_000))).toThrow(FrameError);
    expect(() => encodeFrame({ n: Number.NaN })).toThrow(/not finite/);
  });

  test("is encodeFrameText's bytes, with its errors, at the bound in UTF-8 bytes", () => {
    // '"€€"' is 8 bytes in 4 UTF-16 units; '"€€€"' is 11 bytes.
    const maxBytes = 8;
    expect(encodeFrame("€€", { maxBytes })).toEqual(
      Buffer.from(encodeFrameText("€€", { maxBytes }), "utf8"),
    );
    expect(encodeFrame("€€", { maxBytes }).length).toBe(9);
    for (const encode of [encodeFrame, encodeFrameText]) {
      expect(() => encode("€€€", { maxBytes })).toThrow(
        new FrameError("frameTooLarge", "Frame too large: a message may hold at most 8 bytes"),
      );
      expect(() => encode("a".repeat(7), { maxBytes })).toThrow(/^Frame too large/);
    }
  });
});

describe("readFrames() and writeFrame() over a real unix socket", () => {
  let dir: string | undefined;
  let server: net.Server | undefined;
  afterEach(async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    server = undefined;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("a paused reader makes the writer wait for drain; every frame arrives in order", async () => {
    dir = mkdtempSync(join(tmpdir(), "piw-framing-"));
    const path = join(dir, "s.sock");
    const accepted = new Promise<net.Socket>((resolve) => {
      server = net.createServer(resolve);
      server.listen(path);
    });
    await new Promise<void>((resolve) => server!.once("listening", () => resolve()));
    const client = net.connect(path);
    const peer = await accepted;
    peer.pause();

    const big = { filler: "z".repeat(200_000) };
    const writes: Promise<void>[] = [];
    let pending: { settled: boolean } | null = null;
    for (let i = 0; i < 200 && !pending; i++) {
      const state = { settled: false };
      const write = writeFrame(client, { i, ...big });
      write.then(() => (state.settled = true));
      writes.push(write);
      await new Promise((resolve) => setImmediate(resolve));
      if (!state.settled) pending = state;
    }
    // The writer stopped at a full buffer instead of queueing all 200 frames in memory.
    expect(pending).not.toBeNull();
    expect(writes.length).toBeLessThan(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(pending!.settled).toBe(false);

    const received: number[] = [];
    const reading = (async () => {
      for await (const frame of readFrames(peer)) {
        if (!frame.ok) throw frame.error;
        received.push((frame.value as { i: number }).i);
      }
    })();
    await Promise.all(writes);
    client.end();
    await reading;
    expect(received).toEqual(writes.map((_, i) => i));
  });

  test("writeFrame() rejects on a closed stream and readFrames() reports a cut-off frame", async () => {
    const stream = new PassThrough();
    stream.end('{"a":1}\n{"b":');
    const seen: Frame[] = [];
    for await (const frame of readFrames(stream)) seen.push(frame);
    expect(values(seen)).toEqual([{ a: 1 }, "partialFrame"]);
    await expect(writeFrame(stream, { a: 1 })).rejects.toThrow(/^Frame not written/);
  });
});

describe("corkForTurn()", () => {
  test("frames leave in one write once the turn is over, after what its promises write", async () => {
    // The prepared process's reply and envelope (validation-exchange.ts) against a submit's
    // answer that waited on the same commit on promises.
    const order: string[] = [];
    const channel = new Writable({
      write(chunk, _encoding, done) {
        order.push(`write ${String(chunk).split("\n").filter(Boolean).length}`);
        done();
      },
      writev(chunks, done) {
        order.push(`write ${chunks.length}`);
        done();
      },
    });
    let decided = () => {};
    const answered = new Promise<void>((resolve) => (decided = resolve))
      .then(() => Promise.resolve())
      .then(() => order.push("answer"));
    // From a callback of the event loop, as a frame read: a tick would come before the answer.
    const sent = await new Promise<Promise<void>[]>((resolve) =>
      setImmediate(() => {
        corkForTurn(channel);
        resolve([writeFrame(channel, { reply: 1 }), writeFrame(channel, { envelope: 1 })]);
        decided();
      })
    );
    await answered;
    expect(order).toEqual(["answer"]);
    await Promise.all(sent);
    await new Promise((resolve) => setImmediate(resolve));
    expect(order).toEqual(["answer", "write 2"]);
    // Corked already: left to that cork.
    channel.cork();
    corkForTurn(channel);
    expect(channel.writableCorked).toBe(1);
    channel.uncork();
  });
});
