/**
 * The runs list's filter: the runs whose id (or its short form), workflow, title or state
 * word contains the typed text, ignoring case. Pure; applied to the loaded rows each frame.
 */
import { shortRunId } from "../base/run-id-text.ts";
import type { RunRow } from "../state/viewer-queries.ts";
import { runStateLabel } from "./run-labels.ts";

export function filterRuns(runs: readonly RunRow[], filter: string): readonly RunRow[] {
  const needle = filter.trim().toLowerCase();
  if (needle === "") return runs;
  return runs.filter((run) =>
    [run.runId, shortRunId(run.runId), run.workflowName, run.title ?? "", runStateLabel(run).word]
      .some((field) => field.toLowerCase().includes(needle))
  );
}
