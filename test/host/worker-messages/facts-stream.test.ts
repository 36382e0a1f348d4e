/**
 * The run facts cross the worker channel in bounded pieces: each fits one frame whatever the text
 * holds, pieces never split a surrogate pair, and the joined pieces are exactly the facts.
 */
import { describe, expect, it } from "vitest";
import { createFactsStream } from "../../../src/host/worker-messages/facts-stream.ts";
import { encodeFrame, MAX_FRAME_BYTES } from "../../../src/protocol/framing.ts";
import { FACTS_CHUNK_CHARS, type FactsChunk } from "../../../src/protocol/run-facts.ts";
import { parseWorkerReply, workerReply } from "../../../src/protocol/worker-reply.ts";
import { readRunFacts, runFactsText } from "../../../src/state/run-facts-text.ts";
import {
  recordNodeFailed,
  recordNodeFinished,
  recordNodeStarted,
} from "../../../src/state/transitions/node-attempts.ts";
import { enqueue, launch, openFixture } from "../../support/state-store.ts";

function drain(pieces: string[], chunkChars?: number): FactsChunk[] {
  const stream = createFactsStream(pieces[Symbol.iterator](), chunkChars);
  const chunks: FactsChunk[] = [];
  for (let i = 0; i < 10_000; i++) {
    const chunk = stream.next();
    chunks.push(chunk);
    if (chunk.done) return chunks;
  }
  throw new Error("the stream never ended");
}

describe("facts stream", () => {
  it("cuts text into pieces of at most the bound, never inside a surrogate pair", () => {
    const text = "ab😀cd😀😀e" + "😀".repeat(40) + "tail";
    for (const size of [2, 3, 5, 7, 64]) {
      const chunks = drain([text.slice(0, 5), text.slice(5, 30), text.slice(30)], size);
      expect(chunks.map((c) => c.text).join("")).toBe(text);
      for (const chunk of chunks) {
        expect(chunk.text.length).toBeLessThanOrEqual(size);
        // A lone high surrogate at the end would be mangled on the wire.
        const lastUnit = chunk.text.charCodeAt(chunk.text.length - 1);
        expect(lastUnit >= 0xd800 && lastUnit <= 0xdbff).toBe(false);
      }
      expect(chunks.filter((c) => c.done)).toHaveLength(1);
      expect(chunks.at(-1)!.done).toBe(true);
    }
    expect(drain([])).toEqual([{ text: "", done: true }]);
  });

  it("fits a full piece of the worst text in one reply frame", () => {
    // Three UTF-8 bytes per unit, or two after JSON escaping: the worst a piece can hold.
    for (const unit of ["€", '"', "\\"]) {
      const [chunk] = drain([unit.repeat(FACTS_CHUNK_CHARS * 2)]);
      expect(chunk.text.length).toBe(FACTS_CHUNK_CHARS);
      const reply = workerReply({
        messageId: `${"m".repeat(200)}`,
        outcome: "accepted",
        revision: 2 ** 40,
        factsChunk: chunk,
      });
      expect(encodeFrame(reply).length).toBeLessThan(MAX_FRAME_BYTES);
      expect(parseWorkerReply(reply).ok).toBe(true);
    }
  });

  it("streams exactly the committed facts, outputs spliced in unparsed", () => {
    const f = openFixture();
    try {
      const runId = enqueue(f.store);
      const claim = launch(f.store, runId);
      for (let i = 1; i <= 600; i++) {
        recordNodeStarted(f.store, claim, {
          attemptId: `a${i}`,
          nodeId: `n${i % 3}`,
          nodeKind: "compute",
          effect: i % 2 ? "pure" : "external",
          deadlineAt: i % 5 ? null : 1_000 + i,
        });
        if (i === 600) continue;
        if (i % 4 === 0) {
          recordNodeFailed(f.store, claim, {
            attemptId: `a${i}`,
            outcome: "failed",
            error: { code: "boom", message: `broke "${i}" é😀` },
          });
        } else {
          recordNodeFinished(f.store, claim, {
            attemptId: `a${i}`,
            output: { i, text: "x😀\n\u0000".repeat(i) },
          });
        }
      }
      const chunks = drain([...runFactsText(f.store, runId)], 1_000);
      expect(chunks.length).toBeGreaterThan(100);
      const facts = JSON.parse(chunks.map((c) => c.text).join(""));
      expect(facts).toEqual(readRunFacts(f.store, runId));
      expect(facts.attempts).toHaveLength(600);
      expect(facts.attempts[2]).toMatchObject({
        sequence: 3,
        state: "ok",
        output: { i: 3, text: "x😀\n\u0000".repeat(3) },
      });
      expect(facts.attempts[3].error).toEqual({ code: "boom", message: 'broke "4" é😀' });
      expect(facts.attempts[4].deadlineAt).toBe(1_005);
      expect(facts.attempts[599]).toMatchObject({ state: "running" });
      expect(facts.attempts[599].finishedAt).toBeUndefined();
    } finally {
      f.close();
    }
  });
});
