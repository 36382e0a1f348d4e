/**
 * The operator's reviewed recovery of an ambiguous effect (`effect.resolve`). A run blocked
 * `effectAmbiguous` is never retried by a plain resume: the operator inspects the external
 * system and records what happened. One transaction records the verdict (who, when, which
 * attempt and effects) in the run's event log and resumes the run:
 *
 *   applied     the effect happened: the given output becomes the node's result (a new `ok`
 *               attempt of the node), its ambiguous effects become `applied`; the run routes on;
 *   notApplied  the effect did not happen: the node runs again; managed effects return to
 *               `pending` (re-reserved under their key), an unmanaged marker is `cancelled`;
 *   retry       the operator cannot tell and accepts running it again: as `notApplied`.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { EffectVerdict } from "../../protocol/effect-operations.ts";
import { readLease, runResource } from "../claims.ts";
import { type RunRow } from "../protected-write.ts";
import { blockingAttempt } from "../effect-queries.ts";
import { RevisionConflictError, TransitionError } from "../errors.ts";
import { type CommandReceiptInput, recordHostCommandInTx } from "../host-commands.ts";
import { appendHistory, nextRevision } from "../journal.ts";
import { type StateStore } from "../store.ts";
import { execute } from "../statements.ts";
import { writeTransaction } from "../transactions.ts";
import { encodeValue } from "../values.ts";
import { takeAuthorityInTx } from "./control-claim.ts";
import { describeState, expectState, isTerminalRunState, requireRun } from "./common.ts";

export type { EffectVerdict } from "../../protocol/effect-operations.ts";

export interface ResolveEffectOptions {
  runId: string;
  /** The blocking attempt's id or one of its ambiguous effects' ids (or a start of one). */
  target: string;
  verdict: EffectVerdict;
  /** The node's result for `applied` (required then, refused otherwise). */
  output?: JsonValue;
  /** Who decided (recorded in the event, never in status output). */
  operator: string;
  /** The client the verdict came from, when it came over the socket. */
  clientId?: string;
  expectedRevision?: number;
  /** Committed with the change; its body gains a `resolution` field (the result below). */
  receipt?: CommandReceiptInput;
}

export interface ResolveEffectResult {
  runId: string;
  revision: number;
  verdict: EffectVerdict;
  attemptId: string;
  nodeId: string;
  effectIds: string[];
  /** The new `ok` attempt that carries the adopted output (`applied` only). */
  adoptedAttemptId: string | null;
}

export function resolveAmbiguousEffect(
  store: StateStore,
  opts: ResolveEffectOptions,
): ResolveEffectResult {
  if ((opts.verdict === "applied") !== (opts.output !== undefined)) {
    throw new TypeError(
      opts.verdict === "applied"
        ? "An applied verdict needs the node's output"
        : `A ${opts.verdict} verdict takes no output`,
    );
  }
  const output = opts.output === undefined ? null : encodeValue("node output", opts.output);
  const operator = opts.operator.slice(0, 200);
  return writeTransaction(store, () => {
    const now = store.clock.now();
    const run = requireRun(store, opts.runId);
    if (opts.expectedRevision !== undefined && opts.expectedRevision !== run.revision) {
      throw new RevisionConflictError(opts.runId, opts.expectedRevision, run.revision);
    }
    expectState(
      run,
      "resolve an effect of",
      (r) => r.blocked_reason === "effectAmbiguous" && !isTerminalRunState(r.state),
      "only a run blocked on an ambiguous effect has one to resolve",
    );
    const blocked = blockingAttempt(store, opts.runId);
    if (!blocked) {
      throw new TransitionError(
        opts.runId,
        "resolve an effect of",
        describeState(run),
        "its latest attempt is not an interrupted external attempt",
      );
    }
    if (!namesBlockedAttempt(blocked, opts.target)) {
      throw new TransitionError(
        opts.runId,
        "resolve an effect of",
        describeState(run),
        `${opts.target} is not the blocking attempt ${blocked.attemptId} (node "${blocked.nodeId}")` +
          (blocked.effectIds.length > 0
            ? ` nor one of its effects (${blocked.effectIds.join(", ")})`
            : ""),
      );
    }
    takeAuthorityInTx(store, opts.runId, null, now);
    const revision = nextRevision(store, opts.runId);
    let adoptedAttemptId: string | null = null;
    if (opts.verdict === "applied") {
      adoptedAttemptId = adoptOutput(store, run, blocked, output!, now);
      execute(
        store,
        "UPDATE effects SET state = 'applied', updated_at = :now WHERE attempt_id = :attemptId " +
          "AND state = 'ambiguous'",
        { attemptId: blocked.attemptId, now },
      );
    } else {
      execute(
        store,
        "UPDATE effects SET state = CASE effect_type WHEN 'unmanaged' THEN 'cancelled' ELSE " +
          "'pending' END, updated_at = :now WHERE attempt_id = :attemptId AND state = 'ambiguous'",
        { attemptId: blocked.attemptId, now },
      );
    }
    execute(
      store,
      "UPDATE runs SET paused = 0, blocked_reason = NULL, blocked_detail = NULL, " +
        "approved_retry_attempt_id = CASE WHEN :retry THEN :attemptId " +
        "ELSE approved_retry_attempt_id END WHERE run_id = :runId",
      {
        runId: opts.runId,
        attemptId: blocked.attemptId,
        retry: opts.verdict === "applied" ? 0 : 1,
      },
    );
    appendHistory(store, opts.runId, revision, now, {
      type: "effect.resolved",
      payload: {
        attemptId: blocked.attemptId,
        nodeId: blocked.nodeId,
        verdict: opts.verdict,
        effectIds: blocked.effectIds,
        operator,
        ...(opts.clientId ? { clientId: opts.clientId } : {}),
        adoptedAttemptId,
      },
      summary: { state: run.state, queue: run.queue_state, paused: false, verdict: opts.verdict },
    });
    const resolution = {
      attemptId: blocked.attemptId,
      nodeId: blocked.nodeId,
      verdict: opts.verdict,
      effectIds: blocked.effectIds,
      adoptedAttemptId,
    };
    if (opts.receipt) {
      const body = opts.receipt.receipt;
      recordHostCommandInTx(store, {
        ...opts.receipt,
        receipt: (target) => ({
          ...asObject(typeof body === "function" ? body(target) : body ?? {}),
          resolution,
        }),
      }, { runId: opts.runId, revision, now });
    }
    return { runId: opts.runId, revision, ...resolution };
  });
}

/** A new `ok` attempt of the blocked node carrying the output the operator gave. */
function adoptOutput(
  store: StateStore,
  run: RunRow,
  blocked: { nodeId: string; nodeKind: string; effect: string; sequence: number },
  output: string,
  now: number,
): string {
  const attemptId = store.ids.next("attempt");
  const generation = readLease(store, runResource(run.run_id))?.generation ?? 1;
  execute(
    store,
    "INSERT INTO node_attempts (attempt_id, run_id, sequence, node_id, node_kind, effect, state, " +
      "generation, output_json, started_at, finished_at, deadline_at) VALUES (:attemptId, " +
      ":runId, :sequence, :nodeId, :nodeKind, :effect, 'ok', :generation, :output, :now, :now, " +
      "NULL)",
    {
      attemptId,
      runId: run.run_id,
      sequence: blocked.sequence + 1,
      nodeId: blocked.nodeId,
      nodeKind: blocked.nodeKind,
      effect: blocked.effect,
      generation,
      output,
      now,
    },
  );
  return attemptId;
}

function asObject(value: JsonValue): { [key: string]: JsonValue } {
  return typeof value === "object" && value !== null && !Array.isArray(value) ? value : {};
}

/** Shortest start of an id that names the blocking attempt (status shows ids in 8 characters). */
const MIN_TARGET_PREFIX = 8;

/**
 * The blocking attempt's id or one of its ambiguous effects' ids, whole or by a start of at
 * least MIN_TARGET_PREFIX characters (like run ids): every id it can match belongs to the one
 * attempt that blocks the run, so a start cannot name anything else.
 */
function namesBlockedAttempt(
  blocked: { attemptId: string; effectIds: string[] },
  target: string,
): boolean {
  const ids = [blocked.attemptId, ...blocked.effectIds];
  if (ids.includes(target)) return true;
  return target.length >= MIN_TARGET_PREFIX && ids.some((id) => id.startsWith(target));
}
