/**
 * The client the CLI and the Pi extension use: one lazily opened connection, the host started
 * on demand, one stable client id, and every request retried until its deadline while no host
 * answers (a host that died, restarts, or is stopping). A retry reuses the request id, so a
 * command the host already committed comes back with its stored receipt instead of running
 * twice. A state-changing request also carries its deadline (`notAfter`): a host that sees it
 * later refuses it (`deadlinePassed`), so once the deadline has passed the answer to one last
 * try is definite: applied exactly once (the stored receipt) or not applied.
 */
import { failureDetail, HostUnavailableError } from "../protocol/failures.ts";
import {
  type HostOperation,
  OPERATION_SPECS,
  type OperationReceipt,
} from "../protocol/host-operations.ts";
import type { HostResponse } from "../protocol/host-response.ts";
import { checkClientId, newClientId } from "./client-id.ts";
import { checkCommand } from "./check-command.ts";
import { receiptOf } from "./command-receipt.ts";
import { ensureHost, type EnsureHostOptions, HostStartFailedError } from "./ensure-host.ts";
import {
  DEFAULT_REQUEST_TIMEOUT_MS,
  type HostConnection,
  newRequestId,
  type RequestOptions,
} from "./host-connection.ts";

export const DEFAULT_RETRY_DEADLINE_MS = 60_000;
/** After the deadline, how long the one last try (for a definite answer) may take. */
const FINAL_TRY_MS = 5_000;
const FIRST_BACKOFF_MS = 25;
const MAX_BACKOFF_MS = 500;

export interface HostClientOptions extends EnsureHostOptions {
  /**
   * This client's stable id, sent on every connection (idempotency keys are scoped to it). The
   * Pi extension passes `stableClientId("pi-session:" + sessionId)`; without one the client picks
   * a fresh id once and keeps it for its whole life, across reconnects.
   */
  clientId?: string;
  /**
   * How long a request keeps being retried while no host answers (default 60 s; 0 = one try,
   * the default with `autoStart: false`).
   */
  retryDeadlineMs?: number;
  /**
   * Called when a try found no host to answer and the request is about to be tried again
   * (`retry` counts from 1 for each request): a long-lived caller may say so to its user.
   */
  onRetry?: (operation: HostOperation, retry: number) => void;
}

export interface ClientRequestOptions<Op extends HostOperation> extends RequestOptions<Op> {
  /**
   * Epoch ms after which this request is not tried again, when that comes before the client's
   * own retry deadline (a caller's wait with its own timeout); each try's answer is awaited no
   * longer than what is left.
   */
  retryUntil?: number;
}

export interface HostClient {
  /** The id every request of this client carries. */
  readonly clientId: string;
  /** The host's answer, whatever its outcome. */
  request<Op extends HostOperation>(
    operation: Op,
    options?: ClientRequestOptions<Op>,
  ): Promise<HostResponse>;
  /** The typed receipt of a successful answer; `HostCommandError` for any other outcome. */
  call<Op extends HostOperation>(
    operation: Op,
    options?: ClientRequestOptions<Op>,
  ): Promise<OperationReceipt<Op>>;
  /** The epoch of the host that answered last (undefined before the first answer). */
  readonly hostEpoch: number | undefined;
  /** True once `close()` was called. */
  readonly closed: boolean;
  /**
   * Drops the open connection for good: a request in flight stops retrying and every later one
   * fails with `HostUnavailableError`, so nothing reopens a connection that would keep the
   * owner's process alive after it shut the client down (Pi's print mode exits only once its
   * event loop is empty).
   */
  close(): void;
}

export function createHostClient(options: HostClientOptions = {}): HostClient {
  const clientId = checkClientId(options.clientId ?? newClientId());
  // A client that may not start a host tries once unless told to wait for one.
  const retryDeadlineMs = options.retryDeadlineMs ??
    (options.autoStart === false ? 0 : DEFAULT_RETRY_DEADLINE_MS);
  let connection: Promise<HostConnection> | null = null;
  let lastEpoch: number | undefined;
  let closed = false;

  const closedError = () => new HostUnavailableError("the client was closed");

  const connected = (deadline: number, mayStart = true): Promise<HostConnection> => {
    if (closed) return Promise.reject(closedError());
    if (!connection) {
      connection = ensureHost({
        ...options,
        ...(mayStart ? {} : { autoStart: false }),
        clientId,
        startTimeoutMs: Math.max(
          1,
          Math.min(options.startTimeoutMs ?? Infinity, deadline - Date.now()),
        ),
      });
      connection.catch(() => (connection = null));
    }
    return connection.then((open) => {
      // A host that came up after close() (a start in flight) is not kept connected.
      if (closed) {
        open.close();
        throw closedError();
      }
      if (!open.closed) return open;
      connection = null;
      return connected(deadline, mayStart);
    });
  };
  const drop = (open: HostConnection | undefined) => {
    open?.close();
    connection = null;
  };

  const request = async <Op extends HostOperation>(
    operation: Op,
    clientOptions: ClientRequestOptions<Op> = {},
  ): Promise<HostResponse> => {
    const { retryUntil, ...requestOptions } = clientOptions;
    const mutating = OPERATION_SPECS[operation].mutating;
    const started = Date.now();
    // A stop is for the host that answers now: never wait for (or start) another one to stop.
    let deadline = Math.min(
      started + (operation === "host.stop" ? 0 : retryDeadlineMs),
      retryUntil ?? Infinity,
    );
    const window = deadline - started;
    // A retried command carries its deadline and gets one last try after it (definite answer);
    // a one-try client (deadline 0) sends it plain.
    const fenced = mutating && deadline > Date.now();
    const sent: RequestOptions<Op> = {
      ...requestOptions,
      requestId: requestOptions.requestId ?? newRequestId(),
      ...(fenced ? { notAfter: requestOptions.notAfter ?? deadline } : {}),
    };
    let finalTry = false;
    let backoff = FIRST_BACKOFF_MS;
    let lastError: HostUnavailableError | null = null;
    for (let tries = 0;; tries++) {
      if (closed) throw closedError();
      if (tries > 0 && Date.now() >= deadline) {
        // One more try past the deadline: a host now answers definitely (receipt or refusal).
        if (finalTry || !fenced) break;
        finalTry = true;
        deadline = Date.now() + FINAL_TRY_MS;
      }
      let open: HostConnection | undefined;
      try {
        open = await connected(deadline, operation !== "host.stop");
        // A caller's own deadline bounds the wait for an answer too (a frozen host answers never).
        const bounded = retryUntil === undefined ? {} : {
          timeoutMs: Math.max(
            1,
            Math.min(
              requestOptions.timeoutMs ?? options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS,
              deadline - Date.now(),
            ),
          ),
        };
        const response = await open.request(operation, {
          ...sent,
          ...bounded,
          hostEpoch: open.hostEpoch,
        });
        lastEpoch = response.hostEpoch;
        if (!isRetryableAnswer(response) || Date.now() >= deadline) return response;
        lastError = new HostUnavailableError(
          (response.error?.message ?? response.outcome).replace(/^Host unavailable: /, ""),
        );
      } catch (error) {
        if (!(error instanceof HostUnavailableError) || error instanceof HostStartFailedError) {
          throw error;
        }
        lastError = error;
      }
      drop(open);
      if (closed) throw closedError();
      options.onRetry?.(operation, tries + 1);
      if (closed) throw closedError();
      await new Promise((resolve) => setTimeout(resolve, backoff));
      backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
    }
    throw new HostUnavailableError(
      `${lastError ? failureDetail(lastError) : "no host answered"}; retried for ${
        Math.round(Math.max(0, window) / 1000)
      } s${
        mutating
          ? `; it may or may not have been applied: check with \`${
            checkCommand(operation, requestOptions.runId)
          }\``
          : ""
      }`,
      { cause: lastError },
    );
  };

  return {
    clientId,
    request,
    async call(operation, requestOptions) {
      return receiptOf(operation, await request(operation, requestOptions));
    },
    get hostEpoch() {
      return lastEpoch;
    },
    get closed() {
      return closed;
    },
    close() {
      closed = true;
      const open = connection;
      connection = null;
      open?.then((c) => c.close(), () => {});
    },
  };
}

/**
 * An answer that means "ask again, maybe another host": the host is stopping or lost its epoch,
 * or a request reached a host older than one the client already saw. The client returns one
 * only once its deadline passed (a caller's `retryUntil` included): an answer from no usable host.
 */
export function isRetryableAnswer(response: HostResponse): boolean {
  return response.outcome === "unavailable" ||
    (response.outcome === "rejected" && response.error?.code === "staleEpoch");
}
