/**
 * Durable copies of the child process groups workers registered (`process.register`), so a
 * host that restarts after it and the worker both died can still reap a command nobody stops.
 * One small file per worker epoch in the user-only workers directory
 * (`<stateDir>/workers/<epoch>.groups`, 0600): one `pid:starttime` per line, rewritten whole
 * (temp file + rename) on every change and removed once the worker's children are gone.
 * Recovery reaps exact identity matches only and then removes every such file: it runs before
 * the host launches any worker, so all of them belong to earlier hosts.
 */
import { readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  formatStartIdentity,
  isSameProcessAlive,
  parseStartIdentity,
  type ProcessIdentity,
} from "./process-identity.ts";
import { stopProcessGroup } from "./stop-group.ts";

const SUFFIX = ".groups";

/** `<logDir>/<stem>.groups` for a worker whose captured output is `<logDir>/<stem>.out`. */
export function childGroupsFileFor(stdoutLog: string): string {
  return stdoutLog.replace(/\.out$/, "") + SUFFIX;
}

/** Writes the current set (removes the file when it is empty). */
export function saveChildGroups(
  file: string,
  children: Iterable<ProcessIdentity>,
): void {
  const lines = [...children].map((c) => `${formatStartIdentity(c)}\n`).join("");
  if (lines === "") {
    rmSync(file, { force: true });
    return;
  }
  const temp = `${file}.tmp`;
  writeFileSync(temp, lines, { mode: 0o600 });
  renameSync(temp, file);
}

/**
 * Reaps every group recorded by an earlier host whose leader still runs with the exact recorded
 * start identity (a reused PID is never signalled), then removes the records. Returns how many
 * groups were signalled.
 */
export async function reapRecordedChildGroups(logDir: string, graceMs: number): Promise<number> {
  let names: string[];
  try {
    names = readdirSync(logDir).filter((n) => n.endsWith(SUFFIX) || n.endsWith(`${SUFFIX}.tmp`));
  } catch {
    return 0;
  }
  let reaped = 0;
  for (const name of names) {
    const file = join(logDir, name);
    let text = "";
    try {
      text = readFileSync(file, "utf8");
    } catch {
      continue;
    }
    const identities = text.split("\n").map(parseStartIdentity).filter((i) => i !== null);
    const alive = identities.filter(isSameProcessAlive);
    await Promise.all(alive.map((identity) => stopProcessGroup(identity, { graceMs })));
    reaped += alive.length;
    rmSync(file, { force: true });
  }
  return reaped;
}
