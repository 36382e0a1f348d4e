/**
 * Runs by id prefix, for `run.find` (people type `a1b2` for `run-a1b2c3d4-…`). Ids are
 * printable ASCII, so every id that starts with `prefix` sorts between `prefix` and
 * `prefix + "\x7f"`: one range scan of the primary key, however many runs exist.
 */
import { readRun, type RunView } from "./queries.ts";
import { type StateStore } from "./store.ts";
import { queryAllArgs } from "./statements.ts";

/** At most `limit` runs whose id starts with `prefix`, in id order, and whether more match. */
export function findRunsByIdPrefix(
  store: StateStore,
  prefix: string,
  limit: number,
): { runs: RunView[]; more: boolean } {
  const ids = queryAllArgs<{ run_id: string }>(
    store,
    "SELECT run_id FROM runs WHERE run_id >= ?1 AND run_id < ?2 ORDER BY run_id LIMIT ?3",
    prefix,
    `${prefix}\x7f`,
    limit + 1,
  );
  const runs = ids.slice(0, limit).map((row) => readRun(store, row.run_id)).filter(
    (run): run is RunView => run !== undefined,
  );
  return { runs, more: ids.length > limit };
}
