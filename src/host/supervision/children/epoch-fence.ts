/**
 * The child kit's epoch fence, one check for every kind: each message a child sends names the
 * worker epoch it works for (a run worker's and a validation child's also the run and the claim
 * generation it holds). A message that names another is stale and its payload is never read;
 * the kind says what a stale sender gets (a run worker one `claimLost` reply and a stop, a
 * validation child the end of its exchange, a controller worker a rejection and a stop).
 */
import { checkWorkerFence, type WorkerFence } from "../../../protocol/worker-messages.ts";

/** What a kind fences on: a run's epoch under a claim generation, or a controller's epoch. */
export type EpochFence = WorkerFence | { workerEpoch: string };

export type Staleness = "runChanged" | "generationChanged" | "workerEpochChanged";

/** Null when `header` names `fence`'s epoch; otherwise what changed. */
export function staleness(
  header: { workerEpoch: string; runId?: string; generation?: number },
  fence: EpochFence,
): Staleness | null {
  // A run kind's header always names its run and generation (its schema requires them).
  if ("runId" in fence) return checkWorkerFence(header as WorkerFence, fence);
  return header.workerEpoch === fence.workerEpoch ? null : "workerEpochChanged";
}
