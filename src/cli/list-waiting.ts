/**
 * What the waiting runs of a `list` wait for (a person, an answer, the Pi session): `run.list`
 * carries run summaries only, so the few waiting runs shown are asked with `run.status`, all at
 * once on the one connection. Bounded: past `MAX_LOOKUPS` a run just reads `waiting`.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import type { RunSummary } from "../protocol/run-operations.ts";
import type { RunStateContext } from "./run-state.ts";

const MAX_LOOKUPS = 20;

export async function readWaitingOf(
  connection: HostConnection,
  runs: readonly RunSummary[],
): Promise<Map<string, RunStateContext>> {
  const waiting = runs.filter((run) => run.state === "waiting").slice(0, MAX_LOOKUPS);
  const found = await Promise.all(waiting.map(async (run) => {
    try {
      const receipt = receiptOf(
        "run.status",
        await connection.request("run.status", { runId: run.runId }),
      );
      const context: RunStateContext = {
        waiting: receipt.waiting as Waiting | undefined,
        attempts: receipt.attempts,
      };
      return [run.runId, context] as const;
    } catch {
      // It moved on (answered, cancelled) since the list was read: show it as listed.
      return null;
    }
  }));
  return new Map(found.filter((entry) => entry !== null));
}
