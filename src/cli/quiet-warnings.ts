/**
 * Hides two runtime notices users cannot act on: on Node 22 `node:sqlite` announces itself as
 * experimental, and Node 24+ says the same of the vm loader constant that workflow loading needs.
 * Every other warning still prints. Imported first by main.ts, before anything loads either.
 */
import process from "node:process";

const QUIET = /SQLite is an experimental feature|USE_MAIN_CONTEXT_DEFAULT_LOADER/;
const emitWarning = process.emitWarning;

process.emitWarning = function (warning: string | Error, ...rest: unknown[]) {
  const text = typeof warning === "string" ? warning : warning?.message ?? "";
  if (QUIET.test(text)) return;
  return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
} as typeof process.emitWarning;
