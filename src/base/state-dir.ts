/**
 * Which state directory a process uses: `$PI_WORKFLOWS_STATE_DIR`, else
 * `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`. One function for the client, the CLI's
 * read-only commands and the host, so they can never name different ones. A relative
 * `PI_WORKFLOWS_STATE_DIR` is refused: resolved against each working directory it would name
 * another state directory (another host, other runs) from every project.
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";

export function stateDirFromEnv(env: Record<string, string | undefined> = process.env): string {
  const named = env.PI_WORKFLOWS_STATE_DIR;
  if (named) {
    const refuse = (why: string) =>
      new RangeError(`Invalid PI_WORKFLOWS_STATE_DIR '${named.slice(0, 200)}': ${why}`);
    if (named.startsWith("~")) throw refuse("'~' is not expanded here; use $HOME/...");
    if (!isAbsolute(named)) {
      throw refuse(
        "use an absolute path (a relative one names another state directory from every " +
          "working directory)",
      );
    }
    return resolve(named);
  }
  const agentDir = env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
  return resolve(agentDir, "workflows");
}
