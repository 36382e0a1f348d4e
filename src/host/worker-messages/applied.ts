/**
 * What the host's handling of one worker message came to: the reply's parts and whether it
 * closed the open attempt (message-handlers.ts and the handlers beside it return it).
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { FactsChunk } from "../../protocol/run-facts.ts";

export interface Applied {
  revision?: number;
  /** The next piece of the run's committed facts (`worker.ready`, `facts.next`). */
  factsChunk?: FactsChunk;
  /** Kind-specific answer (the effect reservation). */
  result?: JsonValue;
  /** The worker's open attempt closed with this message. */
  closedAttempt: boolean;
}
