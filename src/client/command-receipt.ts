/**
 * Turns a host answer into a typed receipt or one error a CLI can map to an exit code. The
 * outcome stays on the error so callers can tell `conflict` (retry with the current revision)
 * from `notFound` or `rejected`.
 */
import type { HostOperation, OperationReceipt } from "../protocol/host-operations.ts";
import {
  type HostOutcome,
  type HostResponse,
  parseReceipt,
  SUCCESS_OUTCOMES,
} from "../protocol/host-response.ts";
import { ProtocolRejectedError } from "../protocol/failures.ts";

/** The host answered, but not with success. */
export class HostCommandError extends Error {
  readonly outcome: Exclude<HostOutcome, "accepted" | "adopted">;
  readonly code: string;
  /** The current revision, on `conflict`. */
  readonly revision: number | undefined;
  constructor(response: HostResponse) {
    const error = response.error ?? { code: response.outcome, message: "no reason given" };
    super(`Host answered ${response.outcome}: ${error.message}`);
    this.name = "HostCommandError";
    this.outcome = response.outcome as HostCommandError["outcome"];
    this.code = error.code;
    this.revision = response.revision;
  }
}

/** The validated receipt of a successful answer; throws `HostCommandError` otherwise. */
export function receiptOf<Op extends HostOperation>(
  operation: Op,
  response: HostResponse,
): OperationReceipt<Op> {
  if (!SUCCESS_OUTCOMES.has(response.outcome)) throw new HostCommandError(response);
  const receipt = parseReceipt(operation, response.receipt);
  if (!receipt.ok) {
    throw new ProtocolRejectedError(
      "invalidReceipt",
      `the host sent a bad ${operation} ${receipt.error}`,
    );
  }
  return receipt.value;
}
