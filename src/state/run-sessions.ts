/**
 * The Pi session file of a headless run, chosen by the host when the run is queued and recorded
 * in `run_bindings.pi_session_file`: one per run, in the user-only state directory, so every Pi
 * child of the run (worker/headless-session.ts) continues the same conversation.
 */
import { dirname, join } from "node:path";
import type { StateStore } from "./store.ts";

export function runSessionFile(store: StateStore, runId: string): string {
  return join(dirname(store.path), "sessions", runId, "run.jsonl");
}
