/**
 * `run.rerun`: a new run forked from another at one of its node visits. The fork's committed
 * history up to that node is the parent's: its attempts before the fork point are adopted (copied
 * with a link to the parent's attempt, `adopted_from_attempt_id`), never executed again, so an
 * agent step is not presented again and a managed effect applied there keeps its receipt (the
 * adopted output) and is not applied again. An adopted attempt keeps what its model step used, so
 * the fork's spend starts with what the prefix cost. The run, its adopted attempts, its events and the
 * command receipt commit in ONE transaction: a crash leaves either the whole fork or nothing.
 *
 * Which visit: `--from <node>` names the node's latest visit in the parent; `visit` picks an
 * earlier one (1-based, counting the node's attempts that finished or were the parent's last).
 * An interrupted attempt that was tried again belongs to the same visit as its retry.
 */
import { crashPoint } from "../../base/crash-point.ts";
import { historyFit, type PathStep } from "../history-fit.ts";
import type { DefinitionSnapshot } from "../../protocol/definition-snapshot.ts";
import { RefusedError } from "../errors.ts";
import { recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute, queryAll } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { readRunBudget } from "../run-spend.ts";
import { requireRun } from "./common.ts";
import { enqueueRunInTx, type EnqueueRunOptions, type TransitionResult } from "./run-enqueue.ts";

/** One attempt of the parent, as the fork reads it. */
export interface ParentAttempt {
  attemptId: string;
  nodeId: string;
  nodeKind: string;
  state: string;
  sequence: number;
}

/** Where a fork starts: the parent's attempt of the node it reruns, and which visit that is. */
export interface ForkStart {
  attempt: ParentAttempt;
  /** 1-based visit of the node in the parent. */
  visit: number;
  /** How many visits of the node the parent has. */
  visits: number;
}

/** The parent's attempts in sequence order. */
export function parentAttempts(store: StateStore, runId: string): ParentAttempt[] {
  return queryAll<ParentAttempt>(
    store,
    "SELECT attempt_id AS attemptId, node_id AS nodeId, node_kind AS nodeKind, state, sequence " +
      "FROM node_attempts WHERE run_id = :runId ORDER BY sequence",
    { runId },
  );
}

/** Attempts that count on the run's path (the engine's view): not interrupted, not running. */
function counted(attempt: ParentAttempt): boolean {
  return attempt.state !== "interrupted" && attempt.state !== "running";
}

/**
 * The attempts a fork from `from` adopts: the parent's counted attempts before it, in order. The
 * one definition of a fork's prefix (its cost, its fit check and its copy all read this).
 */
export function adoptedPrefix(
  attempts: readonly ParentAttempt[],
  from: ParentAttempt,
): ParentAttempt[] {
  return attempts.filter((a) => a.sequence < from.sequence && counted(a));
}

/**
 * The parent's visit of `nodeId` a fork reruns (`visit`, default the latest), or a refusal that
 * names the nodes the parent did visit.
 */
export function findForkStart(
  runId: string,
  attempts: readonly ParentAttempt[],
  nodeId: string,
  visit?: number,
): ForkStart {
  const last = attempts.at(-1);
  const visits = attempts.filter((a) => a.nodeId === nodeId && (counted(a) || a === last));
  if (visits.length === 0) {
    const seen = [...new Set(attempts.map((a) => a.nodeId))];
    throw new RefusedError(
      "rejected",
      "nodeNotVisited",
      `Run ${runId} never ran node "${nodeId}"; rerun from one it ran: ${
        seen.length > 0 ? seen.join(", ") : "(none: it ran no node)"
      }`,
    );
  }
  const n = visit ?? visits.length;
  if (n < 1 || n > visits.length) {
    throw new RefusedError(
      "rejected",
      "visitNotFound",
      `Run ${runId} ran node "${nodeId}" ${visits.length} time(s); choose --visit 1 to ${visits.length}`,
    );
  }
  return { attempt: visits[n - 1], visit: n, visits: visits.length };
}

/**
 * The node a fork reruns when the caller names none: where the parent stopped (its failed,
 * timed-out, cancelled or interrupted attempt, the step it waits on, or its last attempt while it
 * is parked). Undefined when the parent ended well or is still moving: then name one.
 */
export function defaultForkNode(
  run: { state: string; queueState: string },
  attempts: readonly ParentAttempt[],
): string | undefined {
  const last = attempts.at(-1);
  if (!last) return undefined;
  if (last.state !== "ok") return last.nodeId;
  return run.queueState === "parked" ? last.nodeId : undefined;
}

/**
 * The node `retry` reruns: the one a failed or timed-out run's last attempt failed or timed out
 * in. Undefined when the last attempt did not (the run failed routing or at its own limits).
 */
export function retryForkNode(attempts: readonly ParentAttempt[]): string | undefined {
  const last = attempts.at(-1);
  return last?.state === "failed" || last?.state === "timed_out" ? last.nodeId : undefined;
}

export interface ForkRunOptions extends Omit<EnqueueRunOptions, "forkedFrom" | "parentRunId"> {
  parentRunId: string;
  /** The node to rerun and which visit of it (default the latest). */
  fromNodeId: string;
  visit?: number;
  /** `current`: the file as it is now (checked against the prefix); `recorded`: the parent's. */
  source: "current" | "recorded";
  /** The graph of `definitionDigest`, for the fit check (required with `source: current`). */
  graph?: Pick<DefinitionSnapshot, "nodes" | "edges" | "startAt">;
}

export interface ForkRunResult extends TransitionResult {
  from: { nodeId: string; attemptId: string; visit: number };
  source: "current" | "recorded";
  /** The parent's attempts the fork adopted, in order. */
  adopted: ParentAttempt[];
}

/**
 * Creates the fork: the run (queued), its adopted attempts, `run.queued` and `run.forked`
 * events, and the receipt, in one transaction. Refuses (nothing written) when the fork start is
 * not in the parent, the prefix no longer fits `graph`, or an effect of the prefix or of the
 * rerun attempt is `ambiguous` (resolve it first: it may have applied).
 */
export function forkRun(store: StateStore, opts: ForkRunOptions): ForkRunResult {
  return writeTransaction(store, () => {
    const now = store.clock.now();
    requireRun(store, opts.parentRunId);
    const attempts = parentAttempts(store, opts.parentRunId);
    const start = findForkStart(opts.parentRunId, attempts, opts.fromNodeId, opts.visit);
    const prefix = adoptedPrefix(attempts, start.attempt);
    if (opts.source === "current") {
      if (!opts.graph) throw new TypeError("A fork on the current source needs its graph");
      requireFit(opts.parentRunId, opts.graph, prefix, opts.fromNodeId);
    }
    requireNoAmbiguousEffect(store, opts.parentRunId, [...prefix, start.attempt]);
    const { receipt, parentRunId: _, fromNodeId: __, visit: ___, source, graph: ____, ...run } =
      opts;
    const forkedFrom = {
      runId: opts.parentRunId,
      nodeId: opts.fromNodeId,
      attemptId: start.attempt.attemptId,
    };
    // The fork keeps the parent's budget as it is now (raised, or set at start), not the
    // workflow's own again: its spend starts with what the adopted prefix cost (the copies
    // carry their usage), so the budget holds across the fork. `budget --raise` moves it on.
    const budget = readRunBudget(store, opts.parentRunId);
    const { runId } = enqueueRunInTx(store, { ...run, budget, forkedFrom }, now);
    // A fork of a controller's child spends from the controller's total too (budget-stop.ts
    // counts its own attempts there, not the adopted copies the parent already counts).
    execute(
      store,
      "UPDATE runs SET budget_pool_id = (SELECT budget_pool_id FROM runs WHERE run_id = " +
        ":parent) WHERE run_id = :runId",
      { parent: opts.parentRunId, runId },
    );
    adoptAttempts(store, runId, prefix);
    // Crash tests: the fork is written but not committed; a crash here must leave nothing.
    crashPoint("host.run.rerun.beforeCommit");
    appendHistory(store, runId, 2, now, {
      type: "run.forked",
      payload: {
        fromRunId: opts.parentRunId,
        fromNodeId: opts.fromNodeId,
        fromAttemptId: start.attempt.attemptId,
        visit: start.visit,
        adoptedAttempts: prefix.length,
        source,
      },
    });
    const result: ForkRunResult = {
      runId,
      revision: 2,
      from: { nodeId: opts.fromNodeId, attemptId: start.attempt.attemptId, visit: start.visit },
      source,
      adopted: prefix,
    };
    if (receipt) recordHostCommandInTx(store, receipt, { runId, revision: 2, now, result });
    return result;
  });
}

/**
 * Refuses a history that no longer fits `graph`, naming the first node that does not and the
 * latest fork point whose prefix still fits (`--from <node> [--visit n]`).
 */
export function requireFit(
  runId: string,
  graph: Pick<DefinitionSnapshot, "nodes" | "edges" | "startAt">,
  path: readonly PathStep[],
  next: string | null,
  advice: (from: string | null) => string = (from) =>
    from
      ? `Rerun from an earlier node (${from}) or restore the file`
      : "Start the workflow again or restore the file",
): void {
  const fit = historyFit(graph, path, next);
  if (fit.fits) return;
  const step = fit.rerunFrom >= 0 ? path[fit.rerunFrom] : undefined;
  let from: string | null = null;
  if (step) {
    const visit = path.slice(0, fit.rerunFrom + 1).filter((s) => s.nodeId === step.nodeId).length;
    const visits = path.filter((s) => s.nodeId === step.nodeId).length;
    from = `--from ${step.nodeId}${visit < visits ? ` --visit ${visit}` : ""}`;
  }
  throw new RefusedError(
    "rejected",
    "historyDoesNotFit",
    `Run ${runId}'s history no longer fits the workflow file: ${fit.reason}. ${advice(from)}`,
  );
}

/**
 * An ambiguous effect may have applied without a receipt: adopting it (or running its node
 * again) could apply it twice or never. The operator records what happened first.
 */
function requireNoAmbiguousEffect(
  store: StateStore,
  runId: string,
  attempts: readonly ParentAttempt[],
): void {
  if (attempts.length === 0) return;
  const ids = attempts.map((a) => a.attemptId);
  const placeholders = ids.map((_, i) => `:a${i}`).join(", ");
  const params = Object.fromEntries(ids.map((id, i) => [`a${i}`, id]));
  const rows = queryAll<{ effect_id: string; node_id: string }>(
    store,
    "SELECT e.effect_id, a.node_id FROM effects e JOIN node_attempts a ON a.attempt_id = " +
      `e.attempt_id WHERE e.state = 'ambiguous' AND e.attempt_id IN (${placeholders}) ` +
      "ORDER BY a.sequence, e.effect_id LIMIT 1",
    params,
  );
  const first = rows[0];
  if (!first) return;
  throw new RefusedError(
    "rejected",
    "effectAmbiguous",
    `Cannot fork run ${runId} yet: node "${first.node_id}" may have applied effect ${first.effect_id} without a receipt. ` +
      `Check the external system, record what happened with 'pi-workflows effect resolve ${runId} ${first.effect_id} applied|notApplied', then rerun`,
  );
}

/** Copies the prefix into the fork as its attempts 1..n (generation 0: never claimed here). */
function adoptAttempts(store: StateStore, runId: string, prefix: readonly ParentAttempt[]): void {
  prefix.forEach((attempt, index) => {
    execute(
      store,
      "INSERT INTO node_attempts (attempt_id, run_id, sequence, node_id, node_kind, effect, " +
        "state, generation, output_json, error_code, error_message, started_at, finished_at, " +
        "deadline_at, adopted_from_attempt_id, usage_json, usage_tokens, usage_cost, submitted, " +
        "rejected, last_rejection) SELECT " +
        ":attemptId, :runId, :sequence, node_id, node_kind, effect, state, 0, output_json, " +
        "error_code, error_message, started_at, finished_at, deadline_at, attempt_id, " +
        "usage_json, usage_tokens, usage_cost, submitted, rejected, last_rejection " +
        "FROM node_attempts WHERE attempt_id = :from",
      {
        attemptId: store.ids.next("attempt"),
        runId,
        sequence: index + 1,
        from: attempt.attemptId,
      },
    );
  });
}
