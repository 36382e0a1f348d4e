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
    /**
     * `alreadyRunning` when another live host holds the epoch; `badSetting` for a bad
     * `PI_WORKFLOWS_*` value (the starter's own environment: a usage error, not an outage);
     * `startFailed` otherwise.
     */
    code: v.picklist(["alreadyRunning", "badSetting", "startFailed"]),
    message: v.pipe(v.string(), v.maxLength(4096)),
  }),
]);
export type HostReadyMessage = v.InferOutput<typeof HostReadyMessageSchema>;

/** The environment variable naming the ready pipe's file descriptor in a detached host. */
export const READY_FD_ENV = "PI_WORKFLOWS_HOST_READY_FD";

export type HostStartCode = "alreadyRunning" | "badSetting" | "startFailed";

/** Why a host could not start; `code` decides the CLI exit code. */
export class HostStartError extends Error {
  readonly code: HostStartCode;
  constructor(code: HostStartCode, message: string) {
    super(message);
    this.name = "HostStartError";
    this.code = code;
  }
}

/** A bad `PI_WORKFLOWS_*` setting: every reader throws a `RangeError` naming the variable. */
export function isBadSetting(error: unknown): boolean {
  return error instanceof RangeError && /^Invalid PI_WORKFLOWS_/.test(error.message);
}
