/**
 * `config.json` in the state directory: the user's own settings for pi-workflows, read by the
 * CLI and the host: `pi`, the Pi command headless runs use when PI_WORKFLOWS_PI is not set (a
 * command name on PATH or a path), and `retention.days`, the retention period of ended runs.
 * Unknown keys are refused so a typo is an error. The file is read by os/user-config-file.ts.
 */
import * as v from "valibot";
import { strictObject } from "./fields.ts";
import { KeepDaysSchema } from "./retention-operations.ts";
import { parseWith } from "./schema-issues.ts";

export const UserConfigSchema = strictObject({
  pi: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(4096))),
  /** `days`: how long ended runs are kept whole before the host prunes them (default 30). */
  retention: v.optional(strictObject({ days: v.optional(KeepDaysSchema) })),
});
export type UserConfig = v.InferOutput<typeof UserConfigSchema>;

/**
 * The text of `config.json` (undefined: no file; `unreadable`: a file that could not be read),
 * validated; absent is an empty config.
 */
export function parseUserConfig(
  text: string | undefined | { unreadable: string },
): { ok: true; config: UserConfig } | { ok: false; message: string } {
  if (text === undefined) return { ok: true, config: {} };
  const invalid = (detail: string) => ({
    ok: false as const,
    message: `Invalid config.json in the state directory: ${detail}`,
  });
  if (typeof text !== "string") {
    return invalid(
      `it cannot be read (${text.unreadable}); make it a file you can read, or remove it`,
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return invalid(`not JSON (${(error as Error).message.split("\n")[0]})`);
  }
  const parsed = parseWith(UserConfigSchema, value, "config");
  return parsed.ok ? { ok: true, config: parsed.value } : invalid(parsed.error);
}
