/**
 * The user-only unix socket: created 0600 at birth (umask 0o177 around listen, so there is no
 * window in which another user could connect before a chmod), inside the 0700 state directory.
 * A socket file left by a dead host is removed; one that a live host answers on is not.
 */
import { lstatSync, unlinkSync } from "node:fs";
import net from "node:net";

/**
 * The longest unix socket path `sockaddr_un` holds, its closing NUL aside: `sun_path` is 108
 * bytes on Linux, 104 on macOS and the BSDs.
 */
export function maxSocketPathBytes(platform: NodeJS.Platform = process.platform): number {
  return platform === "linux" ? 107 : 103;
}

export type SocketProbe = "absent" | "stale" | "live";

/**
 * Asks whatever listens on `socketPath` for a `host.status` answer. `live` when any line comes
 * back before the deadline; `stale` when the file exists but nothing answers.
 */
export function probeSocket(socketPath: string, timeoutMs: number): Promise<SocketProbe> {
  return new Promise((resolve) => {
    let exists = true;
    try {
      lstatSync(socketPath);
    } catch {
      exists = false;
    }
    if (!exists) return resolve("absent");
    const socket = net.connect(socketPath);
    let settled = false;
    const finish = (result: SocketProbe) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish("stale"), timeoutMs);
    socket.on("error", () => finish("stale"));
    socket.on("connect", () => {
      socket.write(
        JSON.stringify({
          clientId: "host-probe",
          operation: "host.status",
          payload: {},
          requestId: `probe-${process.pid}-${Date.now()}`,
          schema: "pi-workflows.host-request.v1",
        }) + "\n",
      );
    });
    socket.on("data", (chunk: Buffer) => {
      if (chunk.includes(0x0a)) finish("live");
    });
    socket.on("end", () => finish("stale"));
  });
}

/** Identity of the socket file this process created, so shutdown never removes a successor's. */
export interface SocketIdentity {
  path: string;
  dev: number;
  ino: number;
}

/** Why `socketPath` cannot be a unix socket here (one line with a shorter-path hint), or null. */
export function socketPathTooLong(
  socketPath: string,
  platform: NodeJS.Platform = process.platform,
): string | null {
  const bytes = Buffer.byteLength(socketPath);
  const max = maxSocketPathBytes(platform);
  if (bytes <= max) return null;
  return `Cannot create the host socket: path is ${bytes} bytes, the limit is ${max} on ` +
    `${platform}; use a shorter PI_WORKFLOWS_STATE_DIR (e.g. ~/.pi-workflows)`;
}

/**
 * Listens on `socketPath` with mode 0600. A stale file must already be judged stale by the caller
 * (`probeSocket`); it is unlinked here.
 */
export async function listenUserOnly(
  server: net.Server,
  socketPath: string,
): Promise<SocketIdentity> {
  const tooLong = socketPathTooLong(socketPath);
  if (tooLong !== null) throw new RangeError(tooLong);
  try {
    unlinkSync(socketPath);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
  }
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      const onError = (error: Error) => reject(error);
      server.once("error", onError);
      server.listen(socketPath, () => {
        server.off("error", onError);
        resolve();
      });
    });
  } finally {
    process.umask(previous);
  }
  const stat = lstatSync(socketPath);
  return { path: socketPath, dev: stat.dev, ino: stat.ino };
}

/**
 * Removes the socket file only when it is still the one this process created. (Closing the
 * server already unlinks its path, as libuv does for unix sockets; this covers the rest.)
 */
export function removeOwnSocket(identity: SocketIdentity): void {
  try {
    const stat = lstatSync(identity.path);
    if (stat.dev === identity.dev && stat.ino === identity.ino) unlinkSync(identity.path);
  } catch {
    // Already gone: nothing to remove.
  }
}
