/**
 * Run ids for people. A run id is `run-<uuid>` (40 characters); text output shows the first
 * 8 hex digits (`run-1a2b3c4d`), and every command that takes a run id accepts any unique
 * prefix of it, with or without `run-`, as git accepts an abbreviated commit. `--json` output
 * keeps full ids.
 */
import { HostCommandError, receiptOf } from "../client/command-receipt.ts";
import type { HostConnection } from "../client/host-connection.ts";
import { failureResponse } from "../protocol/host-response.ts";
import { UsageError } from "./exit-codes.ts";
import { shortRunId, UUID_RUN_ID } from "../base/run-id-text.ts";

/** Candidates an ambiguity error lists. */
export const MAX_CANDIDATES = 5;

export { shortRunId };

/** Whether `typed` is a whole generated run id (no lookup needed). */
export function isFullRunId(typed: string): boolean {
  return UUID_RUN_ID.test(typed);
}

/** The id prefixes `typed` may stand for: itself, and with `run-` in front unless it has it. */
function runIdPrefixes(typed: string): string[] {
  return typed.startsWith("run-") ? [typed] : [typed, `run-${typed}`];
}

interface FoundRun {
  runId: string;
  workflowName: string;
  state: string;
  createdAt: number;
}

/**
 * From the runs found under `runIdPrefixes(typed)` (`more`: some were left out), the id of the
 * one meant, or null when none matches. Several: a usage error (exit 2) naming the candidates,
 * newest first, each by a prefix that tells it apart.
 */
function pickRunId(typed: string, found: readonly FoundRun[], more: boolean): string | null {
  if (found.some((run) => run.runId === typed)) return typed;
  const runs = [...new Map(found.map((run) => [run.runId, run])).values()]
    .sort((a, b) => b.createdAt - a.createdAt);
  if (runs.length === 1 && !more) return runs[0].runId;
  if (runs.length === 0) return null;
  const names = distinctPrefixes(runs.map((run) => run.runId));
  const listed = runs.map((run, i) => `${names[i]} (${run.workflowName}, ${run.state})`);
  throw new UsageError(
    `Run id '${typed}' is ambiguous: ${more ? "more than " : ""}${runs.length} runs match ` +
      `(${listed.join(", ")}${more ? ", ..." : ""}): type more of it`,
  );
}

/**
 * The run `typed` names (see `pickRunId`), from the runs `find` returns for each of its id
 * prefixes (at most MAX_CANDIDATES each; `more`: it left some out).
 */
export async function findRunIdByPrefix(
  typed: string,
  find: (prefix: string) => Promise<{ runs: FoundRun[]; more: boolean }> | {
    runs: FoundRun[];
    more: boolean;
  },
): Promise<string | null> {
  const found: FoundRun[] = [];
  let more = false;
  for (const prefix of runIdPrefixes(typed)) {
    const page = await find(prefix);
    found.push(...page.runs);
    more ||= page.more;
  }
  return pickRunId(typed, found, more);
}

/** What a person sees when no run id starts with what they typed. */
export function unknownRunMessage(typed: string): string {
  return `Unknown run: no run id starts with '${typed}' (see 'pi-workflows list --all')`;
}

/**
 * The full id of the one run whose id starts with `typed` (or with `run-<typed>`). An exact id
 * is taken as it is. No match: `notFound`, as for an unknown full id (exit 3). Several: a usage
 * error (exit 2), see `pickRunId`.
 */
export async function resolveRunId(connection: HostConnection, typed: string): Promise<string> {
  if (isFullRunId(typed)) return typed;
  const runId = await findRunIdByPrefix(typed, async (prefix) =>
    receiptOf(
      "run.find",
      await connection.request("run.find", { payload: { prefix, limit: MAX_CANDIDATES } }),
    ));
  if (runId !== null) return runId;
  throw new HostCommandError(failureResponse({
    requestId: null,
    hostEpoch: connection.hostEpoch ?? 0,
    outcome: "notFound",
    code: "runNotFound",
    message: unknownRunMessage(typed),
  }));
}

/** For each id, its shortest prefix (at least the short form) that no other id shares. */
export function distinctPrefixes(ids: readonly string[]): string[] {
  return ids.map((id) => {
    let length = Math.min(id.length, shortRunId(id).length);
    while (
      length < id.length &&
      ids.some((other) => other !== id && other.startsWith(id.slice(0, length)))
    ) {
      length++;
    }
    return id.slice(0, length);
  });
}
