/**
 * Where a headless run's Pi conversation lives. The host chooses one session file per run
 * (`<stateDir>/sessions/<runId>/run.jsonl`, recorded in `run_bindings`) and every Pi child of the
 * run opens it with `--session`, so each agent and decision step is the next prompt of one
 * conversation across Pi restarts, worker generations and host restarts.
 *
 * Agent group members run in parallel, so each gets a session of its own in
 * `members/<node>.v<visit>.<member>/` (the layout and its lookups: base/pi-session-files.ts): at
 * its first start Pi forks it from the run's session (`--fork`, the whole conversation so far)
 * when that has one, else it starts fresh; a rerun of the member (after a crash) continues its
 * own file.
 *
 * Directories are 0700 and files 0600: a conversation holds prompts, tool output and replies. Pi
 * keeps the mode of a file that exists (it writes the header into our empty file), and a file Pi
 * creates itself (a fork) is narrowed once Pi has started.
 */
import { chmodSync, closeSync, mkdirSync, openSync } from "node:fs";
import { dirname, join } from "node:path";
import {
  fileSize,
  memberSessionDir,
  type MemberSessionKey,
  ownSessionFile,
  sessionFilesIn,
} from "../base/pi-session-files.ts";

/** Creates `dir` (and its parents) and narrows it to 0700. */
function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** An empty 0600 file at `file` unless one exists (then only its mode is narrowed). */
function ensurePrivateFile(file: string): void {
  try {
    closeSync(openSync(file, "wx", 0o600));
  } catch (error) {
    if ((error as { code?: unknown }).code !== "EEXIST") throw error;
    chmodSync(file, 0o600);
  }
}

/** Pi's arguments to open the run's session; creates the file (0600, directory 0700). */
export function runSessionArgs(file: string): string[] {
  ensurePrivateDir(dirname(file));
  ensurePrivateFile(file);
  return ["--session", file];
}

export interface MemberSession {
  args: string[];
  /** How the member's conversation began this time. */
  origin: "continued" | "forked" | "fresh";
  dir: string;
}

/**
 * Pi's arguments for one member: its own file when a rerun finds one, else a fork of the run's
 * session when that holds anything, else a fresh file.
 */
export function memberSessionArgs(
  runFile: string | null,
  sessionsRoot: string,
  key: MemberSessionKey,
): MemberSession {
  const dir = memberSessionDir(sessionsRoot, key);
  ensurePrivateDir(dir);
  const own = ownSessionFile(dir);
  if (own !== undefined) return { args: ["--session", own], origin: "continued", dir };
  if (runFile !== null && fileSize(runFile) > 0) {
    return { args: ["--fork", runFile, "--session-dir", dir], origin: "forked", dir };
  }
  const fresh = join(dir, "member.jsonl");
  ensurePrivateFile(fresh);
  return { args: ["--session", fresh], origin: "fresh", dir };
}

/** Narrows the session files Pi created in `dir` (a fork) to 0600. */
export function restrictSessionFiles(dir: string): void {
  for (const file of sessionFilesIn(dir)) {
    try {
      chmodSync(file, 0o600);
    } catch {
      // gone meanwhile
    }
  }
}
