/** The absolute project directory a command works in (`--cwd`, else the current one). */
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { UsageError } from "./exit-codes.ts";

/** It must exist and be a directory; a one-line `UsageError` otherwise. */
export function projectDir(cwd: string | null): string {
  const dir = resolve(cwd ?? process.cwd());
  let isDir = false;
  try {
    isDir = statSync(dir).isDirectory();
  } catch {
    isDir = false;
  }
  if (!isDir) throw new UsageError(`Invalid --cwd: not a directory: ${dir}`);
  return dir;
}
