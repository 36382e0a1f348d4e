/**
 * `pi-workflows host run|start|status|stop`. `run` is the host itself, attached to this
 * terminal; the others are clients of it.
 */
import { HostStartError, runHost } from "../host/host-main.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, oneLineError } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";

type HostCommand = Extract<CliCommand, { kind: "host" }>;

export async function runHostCommand(
  command: HostCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  switch (command.action) {
    case "run":
      return await hostRun(io, env);
    default: {
      const { runHostClientCommand } = await import("./host-client-command.ts");
      return await runHostClientCommand(command, io, env);
    }
  }
}

async function hostRun(io: CliIo, env: NodeJS.ProcessEnv): Promise<number> {
  try {
    const reason = await runHost({ env, handleSignals: true });
    if (reason === "claimLost") {
      // The listening socket was left open on purpose (see SocketServer.close): exit now.
      process.exit(EXIT.failure);
    }
    // The host closed everything it owns; a handle left by a bug must not keep the process up.
    setTimeout(() => process.exit(EXIT.ok), 2000).unref();
    return EXIT.ok;
  } catch (error) {
    const message = oneLineError(error);
    io.err(message);
    if (error instanceof HostStartError && error.code === "alreadyRunning") return EXIT.refused;
    return error instanceof HostStartError && error.code === "badSetting"
      ? EXIT.usage
      : EXIT.failure;
  }
}
