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
 *
 * A run that has ended (cancelled mid-action, failed) keeps its ambiguous effects, and they
 * stay counted by `host status` until someone checks them: there the verdict only records what
 * happened (`applied`: the effect with the given output as its receipt; `notApplied`: cancelled)
 * and nothing runs again, so `retry` is refused. An ended run takes no new revision or event, so
 * the verdict and the operator are kept in the command's stored receipt.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import type { EffectVerdict } from "../../protocol/effect-operations.ts";
import { readLease, runResource } from "../claims.ts";
import { type RunRow } from "../protected-write.ts";
import { type AmbiguousEffect, blockingAttempt, listAmbiguousEffects } from "../effect-queries.ts";
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
  /** The run had ended: the verdict was recorded and nothing runs again. */
  ended: boolean;
  /** Who decided, for an ended run (whose event log takes no new entry). */
  operator?: string;
}

const NONE_TO_RESOLVE =
  "only a run blocked on an ambiguous effect, or one that has ended with one, has one to resolve";

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
    if (isTerminalRunState(run.state)) {
      return recordEndedVerdict(store, run, opts, output, operator, now);
    }
    expectState(
      run,
      "resolve an effect of",
      (r) => r.blocked_reason === "effectAmbiguous",
      NONE_TO_RESOLVE,
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
      ended: false,
    };
    recordReceipt(store, opts, resolution, revision, now);
    return { runId: opts.runId, revision, ...resolution };
  });
}

/**
 * The verdict on an ambiguous effect of an ended run: the effects of the one attempt the target
 * names become `applied` (with the operator's output as the receipt) or `cancelled`; the run
 * stays as it ended.
 */
function recordEndedVerdict(
  store: StateStore,
  run: RunRow,
  opts: ResolveEffectOptions,
  output: string | null,
  operator: string,
  now: number,
): ResolveEffectResult {
  const ambiguous = listAmbiguousEffects(store, opts.runId);
  if (ambiguous.length === 0) {
    throw new TransitionError(
      opts.runId,
      "resolve an effect of",
      describeState(run),
      NONE_TO_RESOLVE,
    );
  }
  if (opts.verdict === "retry") {
    throw new TransitionError(
      opts.runId,
      "retry an effect of",
      describeState(run),
      "the run has ended and nothing of it runs again; after checking the external system " +
        "record --applied <output-json> or --not-applied",
    );
  }
  const named = ambiguous.filter((e) => namesEffect(e, opts.target));
  const attemptIds = [...new Set(named.map((e) => e.attemptId))];
  if (attemptIds.length !== 1) {
    throw new TransitionError(
      opts.runId,
      "resolve an effect of",
      describeState(run),
      `${opts.target} names ${
        attemptIds.length === 0 ? "none" : "more than one"
      } of its ambiguous effects (${
        ambiguous.map((e) => `attempt ${e.attemptId}, effect ${e.effectId}`).join("; ")
      })`,
    );
  }
  const attemptId = attemptIds[0];
  const effects = ambiguous.filter((e) => e.attemptId === attemptId);
  const effectIds = effects.map((e) => e.effectId);
  for (const effectId of effectIds) {
    execute(
      store,
      "UPDATE effects SET state = :state, receipt_json = CASE WHEN :state = 'applied' THEN " +
        ":output ELSE receipt_json END, updated_at = :now WHERE effect_id = :effectId AND " +
        "state = 'ambiguous'",
      {
        effectId,
        state: opts.verdict === "applied" ? "applied" : "cancelled",
        output,
        now,
      },
    );
  }
  const resolution = {
    attemptId,
    nodeId: effects[0].nodeId,
    verdict: opts.verdict,
    effectIds,
    adoptedAttemptId: null,
    ended: true,
    operator,
  };
  recordReceipt(store, opts, resolution, run.revision, now);
  return { runId: opts.runId, revision: run.revision, ...resolution };
}

function recordReceipt(
  store: StateStore,
  opts: ResolveEffectOptions,
  resolution: Omit<ResolveEffectResult, "runId" | "revision">,
  revision: number,
  now: number,
): void {
  if (!opts.receipt) return;
  const body = opts.receipt.receipt;
  recordHostCommandInTx(store, {
    ...opts.receipt,
    receipt: (target) => ({
      ...asObject(typeof body === "function" ? body(target) : body ?? {}),
      resolution,
    }),
  }, { runId: opts.runId, revision, now });
}

/** An effect named by its id or its attempt's id, whole or by a start as for the blocked run. */
function namesEffect(effect: AmbiguousEffect, target: string): boolean {
  return namesOneOf([effect.attemptId, effect.effectId], target);
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
  return namesOneOf([blocked.attemptId, ...blocked.effectIds], target);
}

/** `target` is one of `ids`, whole or by a start of at least MIN_TARGET_PREFIX characters. */
function namesOneOf(ids: string[], target: string): boolean {
  if (ids.includes(target)) return true;
  return target.length >= MIN_TARGET_PREFIX && ids.some((id) => id.startsWith(target));
}
