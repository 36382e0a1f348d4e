/**
 * The run's committed facts, received in bounded pieces (protocol/run-facts.ts): the first rides
 * on the reply to `worker.ready`, the worker asks for each next one with
 * `worker.progress {op: "facts.next"}` until `done`, then parses the joined JSON text and
 * validates it. Any worker mode that needs the facts calls this after `worker.ready`.
 */
import * as v from "valibot";
import { DecodedRunFactsSchema, type FactsChunk, type RunFacts } from "../protocol/run-facts.ts";
import { describeIssues } from "../protocol/schema-issues.ts";
import type { HostVerdict, Proposer } from "./proposer.ts";

export function receiveRunFacts(proposer: Proposer, ready: HostVerdict): Promise<RunFacts> {
  if (ready.factsChunk === undefined) {
    return Promise.reject(
      new Error("Worker channel failed: the ready reply carried no run facts"),
    );
  }
  return collectFacts(proposer, ready.factsChunk);
}

/**
 * The run's facts from `first` (the validate request's piece) on, or asked for from the first
 * piece on (the validation child has no ready reply).
 */
export async function requestRunFacts(proposer: Proposer, first?: FactsChunk): Promise<RunFacts> {
  return collectFacts(proposer, first ?? await nextChunk(proposer));
}

async function nextChunk(proposer: Proposer): Promise<FactsChunk> {
  const chunk = (await proposer.propose("worker.progress", { op: "facts.next" })).factsChunk;
  if (chunk === undefined) {
    throw new Error("Worker channel failed: a facts.next reply carried no run facts");
  }
  return chunk;
}

async function collectFacts(proposer: Proposer, first: FactsChunk): Promise<RunFacts> {
  let chunk = first;
  const pieces = [chunk.text];
  while (!chunk.done) {
    chunk = await nextChunk(proposer);
    pieces.push(chunk.text);
  }
  let value: unknown;
  try {
    value = JSON.parse(pieces.join(""));
  } catch (error) {
    throw new Error(
      `Worker channel failed: the run facts are not JSON: ${(error as Error).message}`,
    );
  }
  const parsed = v.safeParse(DecodedRunFactsSchema, value);
  if (!parsed.success) {
    throw new Error(`Worker channel failed: ${describeIssues(parsed.issues, "facts")}`);
  }
  return parsed.output;
}
