/**
 * Where the host listens: `<stateDir>/host.sock`. The state directory rule is the one
 * `src/state/store.ts` uses (a test keeps the two equal); it is repeated here so a client does not
 * load the SQLite layer just to find a socket.
 */
import { homedir } from "node:os";
import { join, resolve } from "node:path";

export const SOCKET_FILE_NAME = "host.sock";

/**
 * `$PI_WORKFLOWS_STATE_DIR`, else `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`, made absolute
 * against the current directory.
 */
export function clientStateDir(env: Record<string, string | undefined> = process.env): string {
  // Absolute, so the host and its children (which run in other directories) name the same one.
  if (env.PI_WORKFLOWS_STATE_DIR) return resolve(env.PI_WORKFLOWS_STATE_DIR);
  const agentDir = env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
  return resolve(agentDir, "workflows");
}

export function hostSocketPath(stateDir: string): string {
  return join(stateDir, SOCKET_FILE_NAME);
}
