/**
 * The command a person runs to see whether a state-changing request the client could not get
 * answered was applied: the one that shows what the operation changes (`status` shows runs, not
 * schedules, controllers or a prune's result).
 */
import { shortRunId } from "../base/run-id-text.ts";
import type { HostOperation } from "../protocol/host-operations.ts";

export function checkCommand(operation: HostOperation, runId: string | undefined): string {
  const family = operation.slice(0, operation.indexOf("."));
  if (family === "schedule") return "pi-workflows schedule list";
  if (family === "controller") return "pi-workflows controller list";
  if (operation === "host.prune") return "pi-workflows prune --dry-run";
  // A start or a fork has no id of its own yet: the new run is the newest in the list.
  return runId === undefined || operation === "run.rerun"
    ? "pi-workflows list"
    : `pi-workflows status ${shortRunId(runId)}`;
}
