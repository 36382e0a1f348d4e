/**
 * `start --wait` and `status --wait`: follows a run by polling `run.status` with an event cursor, hands the events to
 * the printer (follow-printer.ts) as they arrive, and stops when the run ends or needs someone
 * (waiting, paused, blocked). The exit code says which (exit-codes.ts).
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { Waiting } from "../protocol/decision-request.ts";
import { HostUnavailableError } from "../protocol/failures.ts";
import type { AttemptSummary, RunSummary } from "../protocol/run-operations.ts";
import { EXIT } from "./exit-codes.ts";
import { createFollowPrinter } from "./follow-printer.ts";
import { formatRunHeadline } from "./format-run.ts";
import { type CliIo, printJson } from "./output.ts";

const POLL_INTERVAL_MS = 150;
const EVENT_PAGE = 200;
/** Consecutive lost connections tolerated while following. */
const MAX_RECONNECTS = 3;

/**
 * Follows `started` until it stops moving. When the host goes away meanwhile (restart, idle
 * exit is impossible while we are connected, a crash), `reconnect` starts or finds the next host
 * and following resumes from the same event cursor: runs survive host restarts, so does --wait.
 */
export async function followRun(
  connection: HostConnection,
  reconnect: () => Promise<HostConnection>,
  started: RunSummary,
  json: boolean,
  io: CliIo,
  /**
   * The first word of the head line: a run this command started, or one it only follows; null
   * when the command printed the run's line itself (a fork).
   */
  verb: "Started" | "Following" | null = "Started",
): Promise<number> {
  const printer = json ? null : createFollowPrinter(io);
  if (!json && verb) io.out(`${verb} ${formatRunHeadline(started, { style: io.style })}`);
  let cursor = 0;
  let failures = 0;
  let current = connection;
  try {
    for (;;) {
      let response;
      try {
        response = await current.request("run.status", {
          runId: started.runId,
          // The graph (for status details) only once, with the first page.
          payload: {
            eventsAfter: cursor,
            eventLimit: EVENT_PAGE,
            ...(cursor === 0 && printer ? { includeDefinition: true } : {}),
          },
        });
        failures = 0;
      } catch (error) {
        if (!(error instanceof HostUnavailableError) || ++failures > MAX_RECONNECTS) throw error;
        current.close();
        current = await reconnect();
        continue;
      }
      const receipt = receiptOf("run.status", response);
      if (cursor === 0) printer?.definition(receipt.definition);
      const events = receipt.events ?? [];
      printer?.events(events, receipt.attempts);
      printer?.output(receipt.lastOutput);
      cursor = receipt.lastEventSeq ?? events.at(-1)?.seq ?? cursor;
      // Drain every event before deciding, so the last lines are never skipped.
      if (events.length < EVENT_PAGE) {
        const code = finalCode(receipt.run);
        if (code !== null) {
          if (json) printJson(io, { run: receipt.run, ...rejectedSteps(receipt.attempts) });
          else {
            printer!.finish(receipt.run, {
              attempts: receipt.attempts,
              waiting: receipt.waiting as Waiting | undefined,
            });
          }
          return code;
        }
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
        printer?.tick(Date.now());
      }
    }
  } finally {
    if (current !== connection) current.close();
  }
}

/** The exit code once the run stops moving, or null while it still runs. */
function finalCode(run: RunSummary): number | null {
  switch (run.state) {
    case "completed":
      return EXIT.ok;
    case "failed":
    case "timed_out":
    case "cancelled":
      return EXIT.runUnsuccessful;
    case "waiting":
      return EXIT.runNeedsAttention;
    default:
      if (run.paused) return EXIT.runNeedsAttention;
      // A blocked run is parked with a reason; it does not move until someone resumes it.
      if (run.blockedReason) return EXIT.runNeedsAttention;
      return null;
  }
}

/**
 * `--wait --json`: the steps (of the latest attempts) whose submissions were rejected, with the
 * counts and the last message, also when a later submission was accepted; nothing when none was.
 */
function rejectedSteps(attempts: readonly AttemptSummary[] | undefined) {
  const steps = (attempts ?? []).flatMap((a) =>
    a.submissions && a.submissions.rejected > 0
      ? [{ nodeId: a.nodeId, attemptId: a.attemptId, state: a.state, ...a.submissions }]
      : []
  );
  return steps.length > 0 ? { rejectedSubmissions: steps } : {};
}
