/** `run.find`: the runs whose id starts with a prefix (a read, answered at once). */
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import { findRunsByIdPrefix } from "../state/run-find-queries.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { runSummary } from "./run-summary.ts";

export function findRunsQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  if (request.operation !== "run.find") throw new TypeError("Expected run.find");
  const { prefix, limit } = request.payload;
  const found = findRunsByIdPrefix(rt.store, prefix, limit);
  // Outputs stay out, as in run.list: each may be up to 1 MiB.
  const runs = found.runs.map((view) => {
    const { output: _, ...summary } = runSummary(view);
    return summary;
  });
  return receiptResponse(request, rt.epoch, {
    runs,
    more: found.more,
  });
}
