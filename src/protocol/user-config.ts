/**
 * `config.json` in the state directory: the user's own settings for pi-workflows, read by the
 * CLI. Today one entry: `pi`, the Pi command headless runs use when PI_WORKFLOWS_PI is not set
 * (a command name on PATH or a path). Unknown keys are refused so a typo is an error.
 */
import * as v from "valibot";
import { strictObject } from "./fields.ts";

export const UserConfigSchema = strictObject({
  pi: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(4096))),
});
export type UserConfig = v.InferOutput<typeof UserConfigSchema>;
