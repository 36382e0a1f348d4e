/**
 * Provider credentials of headless runs, held in the host's memory only (protocol/
 * credential-names.ts): the client that starts or resumes a run supplies them, every worker of
 * the run gets them in its launch envelope (fd 3) for its Pi children, and SQLite keeps their
 * names alone. A host that restarted has none: a run whose recorded names it cannot supply is
 * blocked `credentialsMissing` before a worker starts, until a client resumes it (re-supplying
 * them, or deciding to go on without, so Pi falls back to its own auth.json).
 */
import type { RunEnvironment } from "../protocol/run-environment.ts";
import { readRun } from "../state/queries.ts";
import {
  readCredentialNames,
  readRunSecretNames,
  recordCredentialNames,
} from "../state/run-environments.ts";
import type { StateStore } from "../state/store.ts";
import { blockRun } from "../state/transitions/run-park.ts";

/** The launch envelope's secrets (protocol/worker-launch.ts). */
export interface LaunchSecrets {
  credentials?: RunEnvironment;
  runSecrets?: RunEnvironment;
}

export interface RunCredentials {
  /**
   * Adds to what the host holds for `runId` those of `credentials` whose names the run recorded
   * at its start (a start or a resume). A run blocked `credentialsMissing` is resumed with
   * exactly what it holds then: its recorded names shrink to those.
   */
  supply(runId: string, credentials: RunEnvironment): void;
  /**
   * What a new worker of `runId` gets: `credentials` for its Pi children, and `runSecrets`, those
   * the user named for the run, for the worker itself (its nodes); each absent when empty.
   */
  forLaunch(runId: string): LaunchSecrets;
  /**
   * Blocks `runId` when credentials it was started with are not held (a restarted host).
   * Returns true when it blocked it: the caller launches nothing.
   */
  blockIfMissing(runId: string): boolean;
  /** Drops what is held for runs that have ended. */
  prune(): void;
}

export function createRunCredentials(store: StateStore): RunCredentials {
  const held = new Map<string, RunEnvironment>();
  const prune = () => {
    for (const runId of held.keys()) {
      if (readCredentialNames(store, runId) === null) held.delete(runId);
    }
  };
  return {
    supply(runId, credentials) {
      prune();
      const names = readCredentialNames(store, runId);
      if (names === null) return;
      // Only what the run was started with: a resuming shell offers all it has.
      const wanted = new Set(names);
      const merged = { ...held.get(runId) };
      for (const [name, value] of Object.entries(credentials)) {
        if (wanted.has(name)) merged[name] = value;
      }
      if (Object.keys(merged).length > 0) held.set(runId, merged);
      if (readRun(store, runId)?.blockedReason === "credentialsMissing") {
        recordCredentialNames(store, runId, Object.keys(merged));
      }
    },
    forLaunch(runId) {
      const all = held.get(runId);
      if (!all) return {};
      const runSecrets: RunEnvironment = {};
      for (const name of readRunSecretNames(store, runId)) {
        if (Object.hasOwn(all, name)) runSecrets[name] = all[name];
      }
      return {
        credentials: all,
        ...(Object.keys(runSecrets).length > 0 ? { runSecrets } : {}),
      };
    },
    blockIfMissing(runId) {
      const names = readCredentialNames(store, runId);
      if (names === null || names.length === 0) return false;
      const have = held.get(runId) ?? {};
      const missing = names.filter((name) => !Object.hasOwn(have, name));
      if (missing.length === 0) return false;
      blockRun(store, null, {
        runId,
        reason: "credentialsMissing",
        detail: `the host restarted and no longer holds ${missing.join(", ")}; resume the run ` +
          "from a shell that has them",
      });
      return true;
    },
    prune,
  };
}
