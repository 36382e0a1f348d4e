/**
 * `prune [--keep-days N] [--dry-run] [--json]`: asks the host (the only writer) for a retention
 * pass and prints what it removed, or would remove: runs, rows per table and bytes.
 */
import { receiptOf } from "../client/command-receipt.ts";
import { createHostClient } from "../client/host-client.ts";
import { ENDED_RUN_RECEIPTS, type HostPruneReceipt } from "../protocol/retention-operations.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import { hostRefusalExit } from "./with-host.ts";

export interface PruneCommand {
  kind: "prune";
  keepDays: number | null;
  dryRun: boolean;
  json: boolean;
}

/** A pass over a large database takes a while; its answer comes when it is done. */
const PRUNE_TIMEOUT_MS = 30 * 60_000;

export async function runPruneCommand(
  command: PruneCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  // The retrying client: a host that dies mid-pass is replaced and the same request (its receipt
  // or a pass run to its end by the next host) answers.
  const connection = createHostClient({ env, onWait: (line) => io.err(line) });
  try {
    const receipt = receiptOf(
      "host.prune",
      await connection.request("host.prune", {
        payload: {
          ...(command.keepDays !== null ? { keepDays: command.keepDays } : {}),
          ...(command.dryRun ? { dryRun: true } : {}),
        },
        timeoutMs: PRUNE_TIMEOUT_MS,
      }),
    );
    if (command.json) printJson(io, receipt);
    else for (const line of formatPruneReport(receipt)) io.out(line);
    return EXIT.ok;
  } catch (error) {
    return hostRefusalExit(io, error);
  } finally {
    connection.close();
  }
}

export function formatPruneReport(r: HostPruneReceipt): string[] {
  const verb = r.dryRun ? "Would remove" : "Removed";
  const tables = Object.entries(r.rows).filter(([, n]) => n > 0).sort(([a], [b]) => a < b ? -1 : 1);
  // No ended run went, other rows did (controller history, receipts, snapshots): those are what
  // went, and the line says so rather than "0 ended runs".
  const older = `older than ${r.keepDays} day${r.keepDays === 1 ? "" : "s"}`;
  // The age goes only with what went by age: snapshots go whenever nothing names them.
  const rowsOf = (aged: boolean) =>
    tables.filter(([t]) => UNAGED.has(t) !== aged).map(([t, n]) => rowsText(t, n));
  const aged = rowsOf(true);
  const what = r.runs > 0 || tables.length === 0
    ? `${r.runs} ended run${r.runs === 1 ? "" : "s"} ${older}`
    : listed([...(aged.length > 0 ? [`${listed(aged)} ${older}`] : []), ...rowsOf(false)]);
  const lines = [
    `${verb} ${what} (${r.dryRun ? "about " : ""}${bytesText(r.bytes)})${
      r.runs === 0 && tables.length > 0 ? ", no ended runs" : ""
    }`,
  ];
  if (tables.length > 0) {
    lines.push(`  rows: ${tables.map(([table, n]) => `${table} ${n}`).join(", ")}`);
  }
  if (!r.dryRun) {
    lines.push(
      `  compacted ${r.compactedRuns} ended run${r.compactedRuns === 1 ? "" : "s"}, trimmed ` +
        `${r.trimmedDeltas} viewer delta${r.trimmedDeltas === 1 ? "" : "s"}`,
    );
    lines.push(
      `  state.sqlite ${bytesText(r.fileBytesBefore)} -> ${bytesText(r.fileBytesAfter)}; ` +
        `${r.transactions} transactions, longest ${r.longestLockMs.toFixed(1)} ms`,
    );
  }
  return lines;
}

/** What a table's rows are, when no run went with them: singular and plural. */
const ROW_NAMES: Record<string, [string, string]> = {
  controller_events: ["controller event", "controller events"],
  controller_workers: ["controller worker epoch", "controller worker epochs"],
  host_commands: ["client receipt of no run", "client receipts of no run"],
  // Most go before their run's mark, which may then keep the run (referenced meanwhile).
  [ENDED_RUN_RECEIPTS]: ["client receipt of an ended run", "client receipts of ended runs"],
  workflow_definitions: ["unused definition snapshot", "unused definition snapshots"],
};

/** Tables whose rows go with no age rule: a snapshot goes once no run or schedule names it. */
const UNAGED = new Set(["workflow_definitions"]);

function rowsText(table: string, n: number): string {
  const [one, many] = ROW_NAMES[table] ?? [`${table} row`, `${table} rows`];
  return `${n} ${n === 1 ? one : many}`;
}

/** "a", "a and b", "a, b and c". */
function listed(items: string[]): string {
  return items.length <= 1
    ? items.join("")
    : `${items.slice(0, -1).join(", ")} and ${items[items.length - 1]}`;
}

function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(2)} GiB`;
}
