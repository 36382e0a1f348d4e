/**
 * Where the host listens: `<stateDir>/host.sock`. The state directory rule is
 * `base/state-dir.ts`, shared with `src/state/store.ts` (a client does not load the SQLite
 * layer just to find a socket).
 */
import { join } from "node:path";
import { stateDirFromEnv } from "../base/state-dir.ts";

export const SOCKET_FILE_NAME = "host.sock";

/**
 * `$PI_WORKFLOWS_STATE_DIR`, else `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`, made absolute
 * against the current directory.
 */
export function clientStateDir(env: Record<string, string | undefined> = process.env): string {
  return stateDirFromEnv(env);
}

export function hostSocketPath(stateDir: string): string {
  return join(stateDir, SOCKET_FILE_NAME);
}
