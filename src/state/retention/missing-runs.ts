/**
 * Which of a list of run ids the database no longer holds: the host removes what files such runs
 * left (a pass cut short by an idle exit or a crash deleted them before it could remove theirs).
 * A run row is written before anything of the run reaches the state directory, and only a prune
 * deletes one, so a name without a row is a pruned run's.
 */
import { queryAllArgs } from "../statements.ts";
import type { StateStore } from "../store.ts";

/** Of `runIds`, those with no `runs` row (one read, a primary-key probe each). */
export function runsNotStored(store: StateStore, runIds: readonly string[]): string[] {
  if (runIds.length === 0) return [];
  return queryAllArgs<{ value: string }>(
    store,
    "SELECT j.value FROM json_each(?1) j WHERE NOT EXISTS " +
      "(SELECT 1 FROM runs r WHERE r.run_id = j.value)",
    JSON.stringify(runIds),
  ).map((row) => row.value);
}
