/**
 * `logs`: prints what a run's steps printed (`run.logs`), and with `--follow` keeps asking for
 * what came since, from the cursors of the last answer, until the run ends. Text goes out
 * through the CLI's terminal-safe output; lines are printed whole (a line a step is still
 * writing waits for its end, or for the run's). An agent group's members' conversations are
 * printed under a line naming the member, indented below it.
 */
import { receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import {
  type LogChunk,
  logCursorKey,
  type RunLogsReceipt,
  type StepLog,
} from "../protocol/log-operations.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { LogsCommand } from "./parse-logs.ts";
import { resolveRunId } from "./run-ids.ts";
import { withHost } from "./with-host.ts";
import type { HostClient } from "../client/host-client.ts";
import type { HostOperation } from "../protocol/host-operations.ts";

const POLL_INTERVAL_MS = 300;
/** Host restarts in a row `--follow` reconnects through before it gives up. */
const MAX_RECONNECTS = 3;
const ENDED = new Set(["completed", "failed", "timed_out", "cancelled"]);
const LINE_MARK = { stdout: "  | ", stderr: "  ! ", transcript: "  " } as const;
/** A member's conversation sits under its `agent <id>` line. */
const MEMBER_MARK = "    ";

function lineMark(chunk: LogChunk): string {
  return chunk.member === undefined ? LINE_MARK[chunk.stream] : MEMBER_MARK;
}

export function runLogsCommand(
  command: LogsCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  let following: string | null = null;
  let reconnects = 0;
  let announced = false;
  let gaveUp = false;
  let client: HostClient | null = null;
  // --follow outlives a host restart: the client sends the next read (or retries the one in
  // flight) to the next host, and the cursors are offsets into the step output files, which the
  // next host serves the same, so following goes on where it was. It says so once a restart, and
  // gives up after a few restarts in a row.
  const announce = () => {
    if (following === null || announced) return;
    announced = true;
    if (++reconnects > MAX_RECONNECTS) {
      // Ends the read in flight, or the next one: said below.
      gaveUp = true;
      client?.close();
      return;
    }
    io.err(
      `logs: the host went away; reconnecting to follow ${following} on ` +
        `(${reconnects} of ${MAX_RECONNECTS})`,
    );
  };
  const onRetry = (operation: HostOperation, retry: number) => {
    if (operation === "run.logs" && retry === 1) announce();
  };
  return withHost(env, io, async (connection) => {
    client = connection;
    const runId = await resolveRunId(connection, command.runId);
    if (command.follow) following = runId;
    const printer = createLogPrinter(io);
    const after: Record<string, string> = {};
    let epoch = connection.hostEpoch;
    for (;;) {
      let receipt: Awaited<ReturnType<typeof readLogs>>;
      try {
        receipt = await readLogs(connection, runId, command, after);
      } catch (error) {
        if (!gaveUp) throw error;
        io.err(
          `logs: gave up following ${runId} after ${MAX_RECONNECTS} host restarts in a row; ` +
            `\`pi-workflows logs ${runId} --follow\` follows it again`,
        );
        return EXIT.hostUnavailable;
      }
      // A host that stopped between two reads is replaced without a failed try: its epoch says.
      if (epoch !== undefined && epoch !== connection.hostEpoch) announce();
      else reconnects = 0;
      epoch = connection.hostEpoch;
      announced = false;
      for (const step of receipt.steps) {
        for (const chunk of step.streams) {
          after[logCursorKey(step.attemptId, chunk)] = chunk.cursor;
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
  }, { onRetry });
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
  }).then((response) => receiptOf("run.logs", response));
}

/** Prints steps and their new text; remembers what it showed so a follower prints each piece once. */
export function createLogPrinter(io: CliIo) {
  /** The attempt whose header was printed last. */
  let current: string | null = null;
  /** The agent group member whose conversation was printed last, under `current`. */
  let member: string | null = null;
  const states = new Map<string, string>();
  /** The unfinished last line of each stream, with its step and chunk. */
  const partial = new Map<string, { step: StepLog; chunk: LogChunk; text: string }>();
  const updates = new Map<string, string>();
  let printedAny = false;
  let earlierNoted = false;
  /** The step's line before its text; its state only the first time (changes get their own). */
  const header = (step: StepLog) => {
    if (current === step.attemptId) return;
    current = step.attemptId;
    member = null;
    const first = !states.has(step.attemptId);
    if (first) states.set(step.attemptId, step.state);
    io.out(
      `-- ${step.nodeId} (${step.nodeKind}, step ${step.sequence})${first ? ` ${step.state}` : ""}`,
    );
  };
  /** A member's name before its conversation whenever the text switches to it. */
  const memberLine = (id: string | undefined) => {
    if ((id ?? null) === member) return;
    member = id ?? null;
    if (member !== null) io.out(`  agent ${member}:`);
  };
  const flushPartial = (key: string) => {
    const rest = partial.get(key);
    partial.delete(key);
    if (!rest?.text) return;
    header(rest.step);
    memberLine(rest.chunk.member);
    io.out(lineMark(rest.chunk) + rest.text);
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
          memberLine(chunk.member);
          const key = logCursorKey(step.attemptId, chunk);
          const mark = lineMark(chunk);
          if (chunk.skipped) io.out(`${mark}... (earlier output no longer kept)`);
          const lines = ((partial.get(key)?.text ?? "") + chunk.text).split("\n");
          partial.set(key, { step, chunk, text: lines.pop()! });
          for (const line of lines) io.out(mark + line.replace(/\r$/, ""));
          printedAny = true;
        }
        for (const update of step.updates) {
          const id = `${step.attemptId}/${update.type}/${update.key}`;
          const seen = `${update.count}`;
          if (updates.get(id) === seen) continue;
          updates.set(id, seen);
          header(step);
          memberLine(undefined);
          io.out(`  ~ ${update.type} ${update.key}: ${compact(update.data)}`);
          printedAny = true;
        }
        // An ended step's unfinished last line is whole now.
        if (step.state !== "running" && step.state !== "waiting") {
          for (const chunk of step.streams) flushPartial(logCursorKey(step.attemptId, chunk));
        }
        if (known !== undefined && known !== step.state) {
          current = step.attemptId;
          member = null;
          states.set(step.attemptId, step.state);
          io.out(`-- ${step.nodeId} ${step.state}`);
        }
      }
    },
    /** Prints the lines still waiting for their end, and says when nothing was printed. */
    end(follow: boolean): void {
      for (const key of [...partial.keys()]) flushPartial(key);
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
