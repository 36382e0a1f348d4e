/**
 * The ready handshake of a detached host: the one line `host run` writes on the pipe its starter
 * (a client, src/client/start-host.ts) passes it as fd 3, once it accepts commands or when it
 * cannot start.
 */
import * as v from "valibot";

export const HostReadyMessageSchema = v.union([
  v.strictObject({
    ready: v.literal(true),
    epoch: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
    pid: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  }),
  v.strictObject({
    ready: v.literal(false),
    /** `alreadyRunning` when another live host holds the epoch; `startFailed` otherwise. */
    code: v.picklist(["alreadyRunning", "startFailed"]),
    message: v.pipe(v.string(), v.maxLength(4096)),
  }),
]);
export type HostReadyMessage = v.InferOutput<typeof HostReadyMessageSchema>;

/** The environment variable naming the ready pipe's file descriptor in a detached host. */
export const READY_FD_ENV = "PI_WORKFLOWS_HOST_READY_FD";

/** Why a host could not start; `code` decides the CLI exit code. */
export class HostStartError extends Error {
  readonly code: "alreadyRunning" | "startFailed";
  constructor(code: "alreadyRunning" | "startFailed", message: string) {
    super(message);
    this.name = "HostStartError";
    this.code = code;
  }
}
