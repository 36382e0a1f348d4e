/**
 * `logs`: prints what a run's steps printed (`run.logs`), and with `--follow` keeps asking for
 * what came since, from the cursors of the last answer, until the run ends. Text goes out
 * through the CLI's terminal-safe output; lines are printed whole (a line a step is still
 * writing waits for its end, or for the run's).
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import type { RunLogsReceipt, StepLog } from "../protocol/log-operations.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { LogsCommand } from "./parse-logs.ts";
import { resolveRunId } from "./run-ids.ts";
import { withHost } from "./with-host.ts";
import { ensureHost } from "../client/ensure-host.ts";
import { newClientId } from "../client/client-id.ts";
import { HostUnavailableError } from "../protocol/failures.ts";

const POLL_INTERVAL_MS = 300;
/** Host restarts in a row `--follow` reconnects through before it gives up. */
const MAX_RECONNECTS = 3;
const ENDED = new Set(["completed", "failed", "timed_out", "cancelled"]);
const LINE_MARK = { stdout: "  | ", stderr: "  ! ", transcript: "  " } as const;

export function runLogsCommand(
  command: LogsCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  // One client id for the invocation: a reconnect after a host restart keeps it.
  const clientId = newClientId();
  return withHost(env, io, async (first) => {
    let connection = first;
    try {
      const runId = await resolveRunId(connection, command.runId);
      const printer = createLogPrinter(io);
      const after: Record<string, string> = {};
      let reconnects = 0;
      for (;;) {
        let receipt: RunLogsReceipt;
        try {
          receipt = await readLogs(connection, runId, command, after);
          reconnects = 0;
        } catch (error) {
          // --follow outlives a host restart: the cursors are offsets into the step output
          // files, which the next host serves the same, so following goes on where it was.
          if (!command.follow || !(error instanceof HostUnavailableError)) throw error;
          if (++reconnects > MAX_RECONNECTS) throw error;
          io.err(
            `logs: the host went away; reconnecting to follow ${runId} on ` +
              `(${reconnects} of ${MAX_RECONNECTS})`,
          );
          if (connection !== first) connection.close();
          connection = await ensureHost({ env, clientId });
          continue;
        }
        for (const step of receipt.steps) {
          for (const chunk of step.streams) {
            after[`${step.attemptId}/${chunk.stream}`] = chunk.cursor;
          }
        }
        if (command.json) {
          if (!command.follow) {
            printJson(io, receipt);
            return EXIT.ok;
          }
          if (receipt.steps.some((s) => s.streams.some((c) => c.text !== ""))) {
            printJson(io, receipt);
          }
        } else {
          printer.print(receipt);
        }
        if (receipt.more) continue;
        if (!command.follow || ENDED.has(receipt.state)) break;
        await new Promise((resolve) => setTimeout(resolve, POLL_INTERVAL_MS));
      }
      if (!command.json) printer.end(command.follow);
      return EXIT.ok;
    } finally {
      if (connection !== first) connection.close();
    }
  }, clientId);
}

function readLogs(
  connection: HostConnection,
  runId: string,
  command: LogsCommand,
  after: Record<string, string>,
): Promise<RunLogsReceipt> {
  return connection.request("run.logs", {
    runId,
    payload: {
      ...(command.nodeId !== null ? { nodeId: command.nodeId } : {}),
      attemptLimit: command.attempts,
      ...(Object.keys(after).length > 0 ? { after } : {}),
    },
  }).then((response) => receiptOf("run.logs", response) as RunLogsReceipt);
}

/** Prints steps and their new text; remembers what it showed so a follower prints each piece once. */
export function createLogPrinter(io: CliIo) {
  /** The attempt whose header was printed last. */
  let current: string | null = null;
  const states = new Map<string, string>();
  /** The unfinished last line of each stream, with the stream's mark. */
  const partial = new Map<string, { mark: string; text: string }>();
  const updates = new Map<string, string>();
  let printedAny = false;
  let earlierNoted = false;
  /** The step's line before its text; its state only the first time (changes get their own). */
  const header = (step: StepLog) => {
    if (current === step.attemptId) return;
    current = step.attemptId;
    const first = !states.has(step.attemptId);
    if (first) states.set(step.attemptId, step.state);
    io.out(
      `-- ${step.nodeId} (${step.nodeKind}, step ${step.sequence})${first ? ` ${step.state}` : ""}`,
    );
  };
  const flushPartial = (key: string, stream: keyof typeof LINE_MARK) => {
    const rest = partial.get(key);
    if (rest?.text) io.out(LINE_MARK[stream] + rest.text);
    partial.delete(key);
  };
  return {
    print(receipt: RunLogsReceipt): void {
      if (receipt.earlier && !earlierNoted) {
        earlierNoted = true;
        io.out("(older steps left out: --attempts N shows more)");
      }
      for (const step of receipt.steps) {
        const known = states.get(step.attemptId);
        if (known === undefined) {
          header(step);
          if (step.elsewhere === "interactive") {
            io.out("  (ran in your Pi session: its conversation is there)");
          }
        }
        for (const chunk of step.streams) {
          if (chunk.text === "" && !chunk.skipped) continue;
          header(step);
          const key = `${step.attemptId}/${chunk.stream}`;
          if (chunk.skipped) {
            io.out(`${LINE_MARK[chunk.stream]}... (earlier output no longer kept)`);
          }
          const lines = ((partial.get(key)?.text ?? "") + chunk.text).split("\n");
          partial.set(key, { mark: LINE_MARK[chunk.stream], text: lines.pop()! });
          for (const line of lines) io.out(LINE_MARK[chunk.stream] + line.replace(/\r$/, ""));
          printedAny = true;
        }
        for (const update of step.updates) {
          const id = `${step.attemptId}/${update.type}/${update.key}`;
          const seen = `${update.count}`;
          if (updates.get(id) === seen) continue;
          updates.set(id, seen);
          header(step);
          io.out(`  ~ ${update.type} ${update.key}: ${compact(update.data)}`);
          printedAny = true;
        }
        // An ended step's unfinished last line is whole now.
        if (step.state !== "running" && step.state !== "waiting") {
          for (const c of step.streams) flushPartial(`${step.attemptId}/${c.stream}`, c.stream);
        }
        if (known !== undefined && known !== step.state) {
          current = step.attemptId;
          states.set(step.attemptId, step.state);
          io.out(`-- ${step.nodeId} ${step.state}`);
        }
      }
    },
    /** Prints the lines still waiting for their end, and says when nothing was printed. */
    end(follow: boolean): void {
      for (const rest of partial.values()) if (rest.text) io.out(rest.mark + rest.text);
      partial.clear();
      if (!printedAny && !follow) {
        io.out("(no output: the steps printed nothing and sent no updates)");
      }
    },
  };
}

function compact(data: unknown): string {
  const text = typeof data === "string" ? data : JSON.stringify(data);
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}
