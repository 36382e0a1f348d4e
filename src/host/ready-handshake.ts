/**
 * The ready handshake between a starting client and the detached `host run` it spawns. The parent
 * passes a pipe as fd 3 and names it in `PI_WORKFLOWS_HOST_READY_FD`; the host writes exactly one
 * line there, `{"ready":true,"epoch":N}` once it accepts commands or `{"ready":false,"message":..}`
 * when it cannot start, then closes it. A host started any other way writes nothing.
 */
import net from "node:net";
import { type HostReadyMessage, READY_FD_ENV } from "../protocol/host-ready.ts";

export interface ReadyChannel {
  send(message: HostReadyMessage): void;
}

/** Takes the ready fd from the environment (and removes it, so workers do not inherit it). */
export function openReadyChannel(env: NodeJS.ProcessEnv = process.env): ReadyChannel {
  const raw = env[READY_FD_ENV];
  delete env[READY_FD_ENV];
  const fd = raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : null;
  let sent = false;
  return {
    send(message) {
      if (fd === null || sent) return;
      sent = true;
      try {
        const socket = new net.Socket({ fd, readable: false, writable: true });
        socket.on("error", () => {});
        socket.end(JSON.stringify(message) + "\n");
      } catch {
        // The parent is gone; the socket still tells clients the host is up.
      }
    },
  };
}
