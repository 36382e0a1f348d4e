/**
 * For worker entries of tests: the host's fd-3 channel with a tap, for `runWorker`'s
 * `openChannel`. `out` sees each chunk the worker writes before it goes to the host, `in` each
 * chunk the host sent before the worker reads it.
 */
import { Duplex } from "node:stream";
import { openHostChannel } from "../../src/worker/channel.ts";

export interface ChannelTap {
  out?(chunk: Buffer): void;
  in?(chunk: Buffer): void;
}

export function tappedHostChannel(tap: ChannelTap): Duplex {
  const host = openHostChannel();
  const channel = new Duplex({
    read() {},
    write(chunk: Buffer, _encoding, done) {
      tap.out?.(chunk);
      host.write(chunk, done);
    },
    final(done) {
      host.end();
      done();
    },
    destroy(error, done) {
      host.destroy();
      done(error);
    },
  });
  host.on("data", (chunk: Buffer) => {
    tap.in?.(chunk);
    channel.push(chunk);
  });
  host.on("end", () => channel.push(null));
  host.on("error", (error) => channel.destroy(error));
  return channel;
}
