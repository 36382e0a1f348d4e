/**
 * The running attempt's usage on its way to the host. The latest report is the attempt's whole
 * usage so far; the outcome (`node.finished`, `node.failed`) carries it in its own commit. A
 * `durable` report also goes out at once as `worker.progress {op: "usage"}`, so a crash before
 * the outcome loses none of it. Those sends are coalesced (one in flight; the newest total
 * follows it), and each sets the attempt's usage rather than adding to it, so a retry or an
 * overtaken report never counts twice.
 */
import type { StepUsage } from "../protocol/step-usage.ts";
import { ClaimLostStop, type Proposer } from "./proposer.ts";

export interface UsageRecorder {
  report(usage: StepUsage, durable: boolean): void;
  /** Stops sending and returns the usage for the outcome (null: the step reported none). */
  close(): StepUsage | null;
}

export function createUsageRecorder(
  proposer: Proposer,
  attemptId: string,
  onClaimLost: (error: ClaimLostStop) => void,
): UsageRecorder {
  let latest: StepUsage | null = null;
  let unsent: StepUsage | null = null;
  let sending = false;
  let closed = false;
  const send = () => {
    if (closed || sending || unsent === null) return;
    const usage = unsent;
    unsent = null;
    sending = true;
    proposer.propose("worker.progress", { op: "usage", attemptId, usage }).then(
      () => {
        sending = false;
        send();
      },
      (error) => {
        sending = false;
        if (error instanceof ClaimLostStop) onClaimLost(error);
      },
    );
  };
  return {
    report(usage, durable) {
      if (closed) return;
      latest = usage;
      if (durable) {
        unsent = usage;
        send();
      }
    },
    close() {
      closed = true;
      return latest;
    },
  };
}
