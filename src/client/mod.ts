/** The client library: what the CLI and the Pi extension import to talk to the host. */
export { clientStateDir, hostSocketPath, SOCKET_FILE_NAME } from "./socket-path.ts";
export {
  connectHost,
  type ConnectOptions,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_REQUEST_TIMEOUT_MS,
  type HostConnection,
  newRequestId,
  type RequestOptions,
} from "./host-connection.ts";
export { DEFAULT_START_TIMEOUT_MS, ensureHost, type EnsureHostOptions } from "./ensure-host.ts";
export { HostCommandError, receiptOf } from "./command-receipt.ts";
export { checkClientId, newClientId, stableClientId } from "./client-id.ts";
export { createHostClient, type HostClient, type HostClientOptions } from "./host-client.ts";
export {
  baseRunEnvironment,
  type RunEnvironment,
  runEnvironment,
} from "../protocol/run-environment.ts";
