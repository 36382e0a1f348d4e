/**
 * One client connection to the host socket. Several requests may be in flight at once; answers
 * are matched by `requestId`. Each request has its own deadline. Every way the host can fail to
 * answer (no socket, refused, closed mid-request, silent past the deadline) becomes a
 * `HostUnavailableError`; a host that answers with nonsense becomes a `ProtocolRejectedError`.
 */
import net from "node:net";
import { randomUUID } from "node:crypto";
import { newClientId } from "./client-id.ts";
import { encodeFrame, FrameDecoder, FrameError } from "../protocol/framing.ts";
import {
  HostBusyError,
  HostUnavailableError,
  ProtocolRejectedError,
} from "../protocol/failures.ts";
import { HOST_REQUEST_SCHEMA, type HostRequestInput } from "../protocol/host-request.ts";
import {
  HOST_ERROR_CODES,
  type HostResponse,
  parseHostResponse,
} from "../protocol/host-response.ts";
import type { HostOperation, OperationInput } from "../protocol/host-operations.ts";

export const DEFAULT_CONNECT_TIMEOUT_MS = 2_000;
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface RequestOptions<Op extends HostOperation> {
  runId?: string;
  payload?: OperationInput<Op>;
  expectedRevision?: number;
  idempotencyKey?: string;
  hostEpoch?: number;
  /** The retry deadline (epoch ms) a state-changing request carries (host-request.ts). */
  notAfter?: number;
  /** Reuse an id to retry a request whose answer was lost; a fresh id is generated otherwise. */
  requestId?: string;
  /** Deadline for the answer; defaults to the connection's. */
  timeoutMs?: number;
}

export interface HostConnection {
  readonly clientId: string;
  /** Sends one request and resolves with the host's answer, whatever its outcome. */
  request<Op extends HostOperation>(
    operation: Op,
    options?: RequestOptions<Op>,
  ): Promise<HostResponse>;
  /** The host epoch of the last answer, once one arrived. */
  readonly hostEpoch: number | undefined;
  readonly closed: boolean;
  close(): void;
}

export interface ConnectOptions {
  /** The client's stable id (client-id.ts); a fresh one for this connection when absent. */
  clientId?: string;
  connectTimeoutMs?: number;
  requestTimeoutMs?: number;
}

interface Pending {
  resolve(response: HostResponse): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** A fresh request id: readable prefix, random body. */
export function newRequestId(): string {
  return `req-${randomUUID()}`;
}

/** Connects to the host socket or fails with `HostUnavailableError` within the deadline. */
export function connectHost(
  socketPath: string,
  options: ConnectOptions = {},
): Promise<HostConnection> {
  const connectTimeoutMs = options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const socket = net.connect(socketPath);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new HostUnavailableError(`no connection within ${connectTimeoutMs} ms`));
    }, connectTimeoutMs);
    socket.once("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      socket.destroy();
      reject(new HostUnavailableError(connectFailure(error), { cause: error }));
    });
    socket.once("connect", () => {
      clearTimeout(timer);
      socket.removeAllListeners("error");
      resolve(openConnection(socket, options));
    });
  });
}

function connectFailure(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case "ENOENT":
      return "the host is not running (no socket in the state directory); start it with `pi-workflows host start`";
    case "ECONNREFUSED":
      return "the host is not running (the socket refuses connections); start it with `pi-workflows host start`";
    case "EACCES":
    case "EPERM":
      return "permission denied on the host socket; the state directory must belong to you";
    default:
      return `cannot connect to the host socket (${error.code ?? error.message})`;
  }
}

function openConnection(socket: net.Socket, options: ConnectOptions): HostConnection {
  const clientId = options.clientId ?? newClientId();
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const pending = new Map<string, Pending>();
  const decoder = new FrameDecoder();
  let closedError: Error | null = null;
  let hostEpoch: number | undefined;

  const failAll = (error: Error) => {
    if (!closedError) closedError = error;
    for (const [id, entry] of pending) {
      clearTimeout(entry.timer);
      pending.delete(id);
      entry.reject(error);
    }
    socket.destroy();
  };

  const onResponse = (value: unknown) => {
    const parsed = parseHostResponse(value);
    if (!parsed.ok) {
      failAll(new ProtocolRejectedError("invalidResponse", `the host sent ${parsed.error}`));
      return;
    }
    const response = parsed.value;
    hostEpoch = response.hostEpoch;
    if (response.requestId === null && response.error?.code === HOST_ERROR_CODES.hostBusy) {
      failAll(new HostBusyError(response.error.message));
      return;
    }
    if (response.requestId === null) {
      // The host could not tell which request a frame was and closes the connection.
      const error = response.error ?? { code: "rejected", message: "the host rejected a frame" };
      failAll(new ProtocolRejectedError(error.code, error.message));
      return;
    }
    const entry = pending.get(response.requestId);
    if (!entry) return; // A late answer to a request that already timed out.
    pending.delete(response.requestId);
    clearTimeout(entry.timer);
    entry.resolve(response);
  };

  socket.on("data", (chunk: Buffer) => {
    for (const frame of decoder.push(chunk)) {
      if (closedError) return;
      if (frame.ok) onResponse(frame.value);
      else {failAll(
          new ProtocolRejectedError(frame.error.code, `the host sent ${frame.error.message}`),
        );}
    }
  });
  socket.on("error", (error) => {
    failAll(new HostUnavailableError(`the connection failed: ${error.message}`, { cause: error }));
  });
  socket.on("close", () => {
    failAll(new HostUnavailableError("the host closed the connection before answering"));
  });

  return {
    clientId,
    get hostEpoch() {
      return hostEpoch;
    },
    get closed() {
      return closedError !== null;
    },
    close() {
      failAll(new HostUnavailableError("the connection was closed by the client"));
    },
    request(operation, request = {}) {
      if (closedError) return Promise.reject(closedError);
      const requestId = request.requestId ?? newRequestId();
      if (pending.has(requestId)) {
        return Promise.reject(new Error(`Request not sent: ${requestId} is already in flight`));
      }
      const message: HostRequestInput = {
        schema: HOST_REQUEST_SCHEMA,
        requestId,
        clientId,
        operation,
        runId: request.runId,
        expectedRevision: request.expectedRevision,
        idempotencyKey: request.idempotencyKey,
        hostEpoch: request.hostEpoch,
        notAfter: request.notAfter,
        payload: request.payload ?? {},
      } as HostRequestInput;
      let frame: Buffer;
      try {
        frame = encodeFrame(message);
      } catch (error) {
        // Encoding fails the same way on every try: a refusal of the request, never a host
        // that is unavailable (which the client would retry until its deadline).
        return Promise.reject(
          error instanceof FrameError
            ? new ProtocolRejectedError(error.code, `the request was not sent: ${error.message}`)
            : new ProtocolRejectedError(
              "notJson",
              `the request was not sent: ${(error as Error).message}`,
            ),
        );
      }
      if (socket.destroyed || socket.writableEnded) {
        return Promise.reject(
          new HostUnavailableError("the request could not be sent: the socket is closed"),
        );
      }
      const timeoutMs = request.timeoutMs ?? requestTimeoutMs;
      return new Promise<HostResponse>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(requestId);
          reject(new HostUnavailableError(`no answer to ${operation} within ${timeoutMs} ms`));
        }, timeoutMs);
        pending.set(requestId, { resolve, reject, timer });
        // Written at once, with no wait for 'drain': the caller waits for the answer, and a
        // socket that fails fails every pending request ('error', 'close' above). A wait per
        // request held a drain and a close listener per request in flight on a full socket (a
        // burst of requests passed Node's listener warning).
        socket.write(frame);
      });
    },
  };
}
