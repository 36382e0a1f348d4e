/**
 * The retrying host client (started on demand) for one command: a host killed or stopping
 * mid-request is replaced and the same request (same client id, same request id) is answered by
 * the next one, from its stored receipt when the command was already committed. A refusal by the
 * host is printed as one line and becomes exit 3 (4 when the host is unavailable).
 */
import { HostCommandError } from "../client/command-receipt.ts";
import { createHostClient, type HostClient } from "../client/host-client.ts";
import type { HostOperation } from "../protocol/host-operations.ts";
import { EXIT } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";

export async function withHost(
  env: NodeJS.ProcessEnv,
  io: CliIo,
  command: (connection: HostClient) => Promise<number>,
  options: {
    /** One stable client id per invocation (every retry and reconnect keeps it). */
    clientId?: string;
    onRetry?: (operation: HostOperation, retry: number) => void;
  } = {},
): Promise<number> {
  const connection = createHostClient({
    env,
    ...(options.clientId ? { clientId: options.clientId } : {}),
    ...(options.onRetry ? { onRetry: options.onRetry } : {}),
  });
  try {
    return await command(connection);
  } catch (error) {
    return hostRefusalExit(io, error);
  } finally {
    connection.close();
  }
}

/** A host refusal printed as its one line, as exit 3 (4 when unavailable); anything else throws. */
export function hostRefusalExit(io: CliIo, error: unknown): number {
  if (!(error instanceof HostCommandError)) throw error;
  io.err(error.message);
  return error.outcome === "unavailable" ? EXIT.hostUnavailable : EXIT.refused;
}
