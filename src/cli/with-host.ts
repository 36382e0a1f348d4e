/**
 * One connection to the host (started on demand) for one command; a refusal by the host is
 * printed as one line and becomes exit 3 (4 when the host is unavailable).
 */
import { HostCommandError } from "../client/command-receipt.ts";
import { ensureHost } from "../client/ensure-host.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { newClientId } from "../client/client-id.ts";
import { EXIT } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";

export async function withHost(
  env: NodeJS.ProcessEnv,
  io: CliIo,
  command: (connection: HostConnection) => Promise<number>,
  /** One stable client id per invocation (a reconnect keeps it). */
  clientId: string = newClientId(),
): Promise<number> {
  const connection = await ensureHost({ env, clientId });
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
