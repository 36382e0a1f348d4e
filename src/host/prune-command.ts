/**
 * `host.prune`: a retention pass on demand. The pass spans many short transactions, so its
 * receipt is recorded after the last one; a host that dies during it leaves no receipt, and the
 * client's retry runs a pass again, which finds what is left (every run whole, marked or gone).
 */
import type { HostRequest } from "../protocol/host-request.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  failureResponse,
  type HostResponse,
  receiptJson,
  receiptResponse,
} from "../protocol/host-response.ts";
import { type CommandReceiptInput, recordHostCommand } from "../state/host-commands.ts";
import type { HostRuntime } from "./host-runtime.ts";
import { RetentionConfigError } from "./retention-runner.ts";

export async function pruneCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  if (request.operation !== "host.prune") throw new TypeError("Expected host.prune");
  let report;
  try {
    report = await rt.retention.prune(request.payload);
  } catch (error) {
    if (!(error instanceof RetentionConfigError)) throw error;
    return failureResponse({
      requestId: request.requestId,
      hostEpoch: rt.epoch,
      outcome: "rejected",
      code: "invalidConfig",
      message: `${error.message}; fix it, or name the period with --keep-days`,
    });
  }
  const body: OperationReceipt<"host.prune"> = {
    ...report,
    longestLockMs: Math.round(report.longestLockMs * 1000) / 1000,
    longestLockMsByPhase: Object.fromEntries(
      Object.entries(report.longestLockMsByPhase).map(([k, v]) => [k, Math.round(v * 1000) / 1000]),
    ),
    finishedAt: rt.clock.now(),
  };
  recordHostCommand(rt.store, { ...receipt, receipt: receiptJson(body) });
  return receiptResponse(request, rt.epoch, body);
}
