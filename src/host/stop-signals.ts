/**
 * SIGTERM, SIGINT and SIGHUP stop the host (the CLI's host installs them; in-process tests do
 * not). The first is a graceful stop; a second while stopping exits now, like a crash, which the
 * database and the next host's recovery already handle.
 */
import type { HostLog } from "./host-log.ts";

/** Installs the handlers; returns what removes them. */
export function handleStopSignals(ctx: {
  log: HostLog;
  epoch: number;
  stopping(): boolean;
  stop(signal: NodeJS.Signals): void;
}): () => void {
  const handlers: [NodeJS.Signals, () => void][] = [];
  for (const signal of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
    const handler = () => {
      if (ctx.stopping()) {
        ctx.log("host.forcedExit", { epoch: ctx.epoch, signal });
        process.exit(1);
      }
      ctx.stop(signal);
    };
    handlers.push([signal, handler]);
    process.on(signal, handler);
  }
  return () => {
    for (const [signal, handler] of handlers) process.off(signal, handler);
  };
}
