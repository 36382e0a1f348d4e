/**
 * Hands a worker its run's committed facts in bounded pieces (protocol/run-facts.ts): the JSON
 * text from `runFactsText` is cut into chunks of at most `FACTS_CHUNK_CHARS` UTF-16 units, never
 * between the two halves of a surrogate pair. The text is produced lazily as the worker asks, so
 * the host holds at most about one chunk and one stored value per streaming worker.
 */
import { FACTS_CHUNK_CHARS, type FactsChunk } from "../../protocol/run-facts.ts";
import { runFactsText } from "../../state/run-facts-text.ts";
import type { HostContext } from "../host-context.ts";

export interface FactsStream {
  /** The next chunk; `done` on the last one. */
  next(): FactsChunk;
}

/** The part of a worker's record that holds the facts it is reading (an ActiveWorker). */
export interface FactsReader {
  readonly runId: string;
  factsStream: FactsStream | null;
}

export function createFactsStream(
  pieces: Iterator<string, void, void>,
  chunkChars = FACTS_CHUNK_CHARS,
): FactsStream {
  let buffer = "";
  let ended = false;
  return {
    next() {
      while (!ended && buffer.length < chunkChars) {
        const piece = pieces.next();
        if (piece.done) ended = true;
        else buffer += piece.value;
      }
      let cut = Math.min(chunkChars, buffer.length);
      // A high surrogate at the cut waits for its low half (in the buffer or the next piece).
      if ((cut < buffer.length || !ended) && isHighSurrogate(buffer.charCodeAt(cut - 1))) cut--;
      const text = buffer.slice(0, cut);
      buffer = buffer.slice(cut);
      return { text, done: ended && buffer.length === 0 };
    },
  };
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * Starts (or, for a replayed `worker.ready`, restarts) the run's facts for the worker: they
 * follow in bounded pieces; the worker asks for the rest with `facts.next`. Returns the first.
 */
export function startFacts(ctx: HostContext, worker: FactsReader): FactsChunk {
  worker.factsStream = createFactsStream(runFactsText(ctx.store, worker.runId));
  return nextFactsChunk(worker);
}

/** The next piece of the facts the worker is reading (`facts.next`). */
export function nextFactsChunk(worker: FactsReader): FactsChunk {
  const chunk = worker.factsStream!.next();
  if (chunk.done) worker.factsStream = null;
  return chunk;
}
