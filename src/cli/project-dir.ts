/** The absolute project directory a command works in (`--cwd`, else the current one). */
import { statSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
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

/**
 * The directory the user typed `npm run pi-workflows -- …` in: npm runs the script in the package
 * directory and names the caller's in `INIT_CWD`. Null outside that script (including `npm start`,
 * whose arguments are the package's own) or when it is not an absolute directory.
 */
export function npmCallerDir(env: NodeJS.ProcessEnv): string | null {
  const dir = env.INIT_CWD;
  if (env.npm_lifecycle_event !== "pi-workflows" || !dir || !isAbsolute(dir)) return null;
  try {
    return statSync(dir).isDirectory() ? dir : null;
  } catch {
    return null;
  }
}
