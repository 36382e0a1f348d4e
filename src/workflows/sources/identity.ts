/**
 * Source identity: which bytes a run's definition came from. The root is the workflow file
 * (canonical real path + sha256 of its bytes) or a built-in id + revision; `mounted` lists every
 * other file the load read (relative imports, included workflow files). The worker checks the
 * saved identity by hashing files WITHOUT loading them, then compares the fresh load's mounted
 * map with the saved one, so changed code never runs under an old run.
 */
import { readFileSync } from "node:fs";
import { sha256Hex } from "../../protocol/canonical-json.ts";
import type { MountedSource, WorkflowSource } from "../../protocol/worker-launch.ts";
import { findBuiltin } from "./builtin-catalog.ts";

export type { MountedSource, SourceRoot, WorkflowSource } from "../../protocol/worker-launch.ts";

export interface SourceChange {
  /** A file path or `builtin:<id>`. */
  source: string;
  reason: "missing" | "changed" | "added" | "removed" | "unknownBuiltin" | "revisionChanged";
  /**
   * The run's own workflow (the identity's root), not a file or built-in it mounted: a root
   * built-in that is gone has nothing to go on with (`sourceWayOn`).
   */
  root?: true;
  /** A file's digest when the run started, and now (null: it cannot be read). */
  recorded?: string;
  current?: string | null;
}

export type SourceCheck = { ok: true } | { ok: false; changed: SourceChange[] };

/** `sha256:<hex>` of a file's bytes, or null when it cannot be read. */
export function hashFile(path: string): string | null {
  try {
    return `sha256:${sha256Hex(readFileSync(path))}`;
  } catch {
    return null;
  }
}

/** Re-hashes every file of a saved identity; loads nothing. */
export function verifySourceIdentity(source: WorkflowSource): SourceCheck {
  const changed: SourceChange[] = [];
  for (const [index, entry] of [source.root, ...source.mounted].entries()) {
    const root = index === 0 ? { root: true as const } : {};
    if (entry.kind === "builtin") {
      const found = findBuiltin(entry.id);
      if (!found) {
        changed.push({ source: `builtin:${entry.id}`, reason: "unknownBuiltin", ...root });
      } else if (found.revision !== entry.revision) {
        changed.push({ source: `builtin:${entry.id}`, reason: "revisionChanged", ...root });
      }
      continue;
    }
    const hash = hashFile(entry.path);
    const digests = { recorded: entry.hash, current: hash, ...root };
    if (hash === null) changed.push({ source: entry.path, reason: "missing", ...digests });
    else if (hash !== entry.hash) {
      changed.push({ source: entry.path, reason: "changed", ...digests });
    }
  }
  return changed.length === 0 ? { ok: true } : { ok: false, changed };
}

/** Compares the mounted map of a fresh load with the saved one (order does not matter). */
export function compareMountedSources(
  saved: readonly MountedSource[],
  fresh: readonly MountedSource[],
): SourceCheck {
  const key = (m: MountedSource) => (m.kind === "builtin" ? `builtin:${m.id}` : m.path);
  const digest = (m: MountedSource) => (m.kind === "builtin" ? m.revision : m.hash);
  const before = new Map(saved.map((m) => [key(m), digest(m)]));
  const after = new Map(fresh.map((m) => [key(m), digest(m)]));
  const changed: SourceChange[] = [];
  for (const [k, d] of after) {
    if (!before.has(k)) changed.push({ source: k, reason: "added" });
    else if (before.get(k) !== d) changed.push({ source: k, reason: "changed" });
  }
  for (const k of before.keys()) {
    if (!after.has(k)) changed.push({ source: k, reason: "removed" });
  }
  return changed.length === 0 ? { ok: true } : { ok: false, changed };
}

/**
 * Compares a fresh load's whole identity (root and mounted) with the saved one. The root hash of
 * a fresh load comes from the bytes the loader actually read, so this also catches a file that
 * changed between `verifySourceIdentity` and the load.
 */
export function compareSourceIdentity(saved: WorkflowSource, fresh: WorkflowSource): SourceCheck {
  const rootKey = (r: WorkflowSource["root"]) =>
    r.kind === "builtin" ? `builtin:${r.id}@${r.revision}` : `${r.path}@${r.hash}`;
  const mounted = compareMountedSources(saved.mounted, fresh.mounted);
  const changed = mounted.ok ? [] : [...mounted.changed];
  if (rootKey(saved.root) !== rootKey(fresh.root)) {
    const source = saved.root.kind === "builtin" ? `builtin:${saved.root.id}` : saved.root.path;
    changed.unshift({
      source,
      reason: saved.root.kind === "builtin" ? "revisionChanged" : "changed",
    });
  }
  return changed.length === 0 ? { ok: true } : { ok: false, changed };
}

/** One line for logs and park reasons: counts only, no paths. */
export function describeSourceChanges(changes: readonly SourceChange[]): string {
  const counts = new Map<string, number>();
  for (const c of changes) counts.set(c.reason, (counts.get(c.reason) ?? 0) + 1);
  return `Workflow source changed: ${
    [...counts].map(([reason, n]) => `${n} ${reason}`).join(", ")
  }`;
}

/** A run's workflow reference: `builtin:<id>`, or the absolute root path of a resolved file. */
export function canonicalWorkflowRef(source: WorkflowSource): string {
  return source.root.kind === "file" ? source.root.path : `builtin:${source.root.id}`;
}
