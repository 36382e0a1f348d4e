/**
 * `effect.resolve`: records the operator's verdict on an ambiguous effect with the command
 * receipt in one transaction (state/transitions/effect-resolve.ts), answers after the commit,
 * then wakes the scheduler so the resumed run moves on.
 */
import type { HostRequest } from "../protocol/host-request.ts";
import { type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { resolveAmbiguousEffect } from "../state/transitions/effect-resolve.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { committedRunReceipt } from "./run-summary.ts";

export function resolveEffectCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): HostResponse {
  if (request.operation !== "effect.resolve") throw new TypeError("Expected effect.resolve");
  const payload = request.payload;
  const committed = committedRunReceipt(rt.store);
  const result = resolveAmbiguousEffect(rt.store, {
    runId: request.runId!,
    target: payload.target,
    verdict: payload.verdict,
    output: payload.output,
    operator: payload.operator ?? "unknown",
    clientId: request.clientId,
    expectedRevision: request.expectedRevision,
    receipt: { ...receipt, receipt: committed.receipt },
  });
  rt.log("effect.resolved", {
    runId: result.runId,
    revision: result.revision,
    verdict: result.verdict,
    ended: result.ended,
  });
  if (!result.ended) rt.supervision.wake();
  const { runId: _, revision: __, ...resolution } = result;
  return receiptResponse(request, rt.epoch, { ...committed.body(), resolution }, {
    revision: result.revision,
  });
}
