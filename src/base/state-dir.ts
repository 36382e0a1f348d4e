/**
 * Which state directory a process uses: `$PI_WORKFLOWS_STATE_DIR`, else
 * `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`. One function for the client, the CLI's
 * read-only commands and the host, so they can never name different ones. A relative
 * `PI_WORKFLOWS_STATE_DIR` is refused: resolved against each working directory it would name
 * another state directory (another host, other runs) from every project.
 */
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import * as v from "valibot";

/** `PI_WORKFLOWS_STATE_DIR` as the environment gives it: an absolute path, normalized. */
export const StateDirEnvSchema = v.pipe(
  v.string(),
  v.check((dir) => !dir.startsWith("~"), "'~' is not expanded here; use $HOME/..."),
  v.check(
    isAbsolute,
    "use an absolute path (a relative one names another state directory from every working " +
      "directory)",
  ),
  v.transform((dir) => resolve(dir)),
);

export function stateDirFromEnv(env: Record<string, string | undefined> = process.env): string {
  const named = env.PI_WORKFLOWS_STATE_DIR;
  if (named) {
    const parsed = v.safeParse(StateDirEnvSchema, named);
    if (!parsed.success) {
      throw new RangeError(
        `Invalid PI_WORKFLOWS_STATE_DIR '${named.slice(0, 200)}': ${parsed.issues[0].message}`,
      );
    }
    return parsed.output;
  }
  const agentDir = env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
  return resolve(agentDir, "workflows");
}
