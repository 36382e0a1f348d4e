/**
 * The client the CLI and the Pi extension use: one lazily opened connection, the host started
 * on demand, and requests retried on a fresh connection when the host went away before it
 * answered. A retry reuses the request id, so a command the host already committed is answered
 * from its stored receipt (`adopted`) instead of running twice.
 */
import { HostUnavailableError } from "../protocol/failures.ts";
import type { HostOperation, OperationReceipt } from "../protocol/host-operations.ts";
import type { HostResponse } from "../protocol/host-response.ts";
import { receiptOf } from "./command-receipt.ts";
import { checkClientId, newClientId } from "./client-id.ts";
import { ensureHost, type EnsureHostOptions } from "./ensure-host.ts";
import { type HostConnection, newRequestId, type RequestOptions } from "./host-connection.ts";

export interface HostClientOptions extends EnsureHostOptions {
  /**
   * This client's stable id, sent on every connection (idempotency keys are scoped to it). The
   * Pi extension passes `stableClientId("pi-session:" + sessionId)`; without one the client picks
   * a fresh id once and keeps it for its whole life, across reconnects.
   */
  clientId?: string;
  /** Extra attempts after the host became unavailable mid-request (default 1). */
  retries?: number;
}

export interface HostClient {
  /** The id every request of this client carries. */
  readonly clientId: string;
  /** The host's answer, whatever its outcome. */
  request<Op extends HostOperation>(
    operation: Op,
    options?: RequestOptions<Op>,
  ): Promise<HostResponse>;
  /** The typed receipt of a successful answer; `HostCommandError` for any other outcome. */
  call<Op extends HostOperation>(
    operation: Op,
    options?: RequestOptions<Op>,
  ): Promise<OperationReceipt<Op>>;
  close(): void;
}

export function createHostClient(options: HostClientOptions = {}): HostClient {
  const retries = options.retries ?? 1;
  const clientId = checkClientId(options.clientId ?? newClientId());
  const connectOptions = { ...options, clientId };
  let connection: Promise<HostConnection> | null = null;

  const connected = (): Promise<HostConnection> => {
    if (!connection) {
      connection = ensureHost(connectOptions);
      connection.catch(() => (connection = null));
    }
    return connection.then((open) => {
      if (!open.closed) return open;
      connection = null;
      return connected();
    });
  };

  const request = async <Op extends HostOperation>(
    operation: Op,
    requestOptions: RequestOptions<Op> = {},
  ): Promise<HostResponse> => {
    const sent = { ...requestOptions, requestId: requestOptions.requestId ?? newRequestId() };
    for (let attempt = 0;; attempt++) {
      let open: HostConnection | undefined;
      try {
        open = await connected();
        return await open.request(operation, sent);
      } catch (error) {
        if (!(error instanceof HostUnavailableError) || attempt >= retries) throw error;
        // A silent host may still answer this connection later: drop it so the retry is the
        // only copy of the request waiting for an answer.
        open?.close();
        connection = null;
      }
    }
  };

  return {
    clientId,
    request,
    async call(operation, requestOptions) {
      return receiptOf(operation, await request(operation, requestOptions));
    },
    close() {
      const open = connection;
      connection = null;
      open?.then((c) => c.close(), () => {});
    },
  };
}
