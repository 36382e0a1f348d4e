/**
 * Where a run's Pi conversations are on disk, for the worker that writes them
 * (worker/headless-session.ts) and the host that reads them back (`run.logs`): the run's session
 * file `<stateDir>/sessions/<runId>/run.jsonl` (recorded in `run_bindings`), and beside it one
 * directory per agent group member and group visit, `members/<node>.v<visit>.<member>/`, holding
 * that member's own session. Lookups only: nothing here creates or changes a file.
 */
import { readdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";

export interface MemberSessionKey {
  nodeId: string;
  visit: number;
  memberId: string;
}

/**
 * The directory of a run's sessions: beside the run's session file, or (a run without one, an
 * interactive run whose agent groups run headless members) `<stateDir>/sessions/<runId>`.
 */
export function runSessionsRoot(
  runFile: string | null,
  stateDir: string | null,
  runId: string,
): string {
  return runFile ? dirname(runFile) : join(stateDir ?? "", "sessions", runId);
}

/** The directory of one agent group member's session, beside the run's session file. */
export function memberSessionDir(sessionsRoot: string, key: MemberSessionKey): string {
  return join(sessionsRoot, "members", memberDirName(key));
}

/**
 * The session file of every member of one visit of group `nodeId` that has one, by member id
 * (a member's directory is `<node>.v<visit>.<member>`; member ids need no escaping).
 */
export function memberSessionFiles(
  sessionsRoot: string,
  nodeId: string,
  visit: number,
): Map<string, string> {
  const prefix = memberDirName({ nodeId, visit, memberId: "" });
  const files = new Map<string, string>();
  let names: string[];
  try {
    names = readdirSync(join(sessionsRoot, "members")).sort();
  } catch {
    return files; // no member ever started
  }
  for (const name of names) {
    if (!name.startsWith(prefix) || name.length === prefix.length) continue;
    const file = ownSessionFile(join(sessionsRoot, "members", name));
    if (file !== undefined) files.set(name.slice(prefix.length), file);
  }
  return files;
}

/** A member's own conversation in `dir`: its first session file that holds anything. */
export function ownSessionFile(dir: string): string | undefined {
  return sessionFilesIn(dir).find((file) => fileSize(file) > 0);
}

/** The session files (`*.jsonl`) in `dir`, sorted; none when it does not exist. */
export function sessionFilesIn(dir: string): string[] {
  try {
    return readdirSync(dir).filter((name) => name.endsWith(".jsonl")).sort().map((name) =>
      join(dir, name)
    );
  } catch {
    return [];
  }
}

/** The size of `file`, 0 when it does not exist. */
export function fileSize(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

function memberDirName(key: MemberSessionKey): string {
  return `${key.nodeId}.v${key.visit}.${key.memberId}`.replace(/[^A-Za-z0-9_.-]/g, "_");
}
