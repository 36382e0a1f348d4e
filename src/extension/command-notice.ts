/**
 * How a slash command answers: a Pi notice where Pi has a UI (the TUI, RPC); in print and JSON
 * modes, which have none, one line on stderr (stdout keeps the answer), and a refusal or error
 * makes `pi -p "/workflow …"` exit 1. Pi 1.6.0's extension API has no way to set the exit code
 * (a command handler that throws is reported and swallowed); print mode only ever raises
 * Node's `process.exitCode` (main.js sets it when its own result is not 0), so setting it here
 * survives to the exit.
 */
import type { PiContext } from "./pi-api.ts";

export type NoticeLevel = "info" | "warning" | "error";

export function commandNotice(ctx: PiContext): (text: string, level?: NoticeLevel) => void {
  return (text, level = "info") => {
    if (ctx.hasUI) return ctx.ui.notify(text, level);
    process.stderr.write(`${text}\n`);
    if (level === "error") process.exitCode = 1;
  };
}
