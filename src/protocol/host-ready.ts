/**
 * The ready handshake of a detached host: the one line `host run` writes on the pipe `host start`
 * passes it as fd 3, once it accepts commands or when it cannot start.
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
