/**
 * The node ids of a run's workflow definition, for refusing a node name the workflow does not
 * have (`run.logs`). A definition snapshot is stored under the digest of its content, so the ids
 * of one digest never change: they are read and decoded once per store, not at every poll of a
 * `logs --follow` that waits for a node to start.
 */
import type { StateStore } from "../state/store.ts";
import { readDefinitionSnapshot } from "../state/viewer-step-queries.ts";

/** Digests remembered per store (the newest used; a few hundred bytes each). */
const KEPT = 64;
const cache = new WeakMap<StateStore, Map<string, readonly string[]>>();

/** The definition's node ids, or null when the store has no such snapshot (none is remembered). */
export function definitionNodeIds(store: StateStore, digest: string): readonly string[] | null {
  let known = cache.get(store);
  if (!known) cache.set(store, known = new Map());
  const hit = known.get(digest);
  if (hit) {
    // Most recently used last: the first key is the one to forget.
    known.delete(digest);
    known.set(digest, hit);
    return hit;
  }
  const definition = readDefinitionSnapshot(store, digest) as
    | { nodes?: Record<string, unknown> }
    | undefined;
  if (!definition?.nodes) return null;
  const ids = Object.keys(definition.nodes);
  known.set(digest, ids);
  if (known.size > KEPT) known.delete(known.keys().next().value!);
  return ids;
}
