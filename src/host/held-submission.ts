/**
 * A submission validated before it is recorded (issue 37: the handoff's commits). When the run's
 * prepared process is idle as a new submission arrives, the host checks the transport contract
 * by writing the submission exactly as it records one, writes the validate request, and rolls
 * that transaction back: the submission is held here, in memory, and recorded only with its
 * verdict, as a savepoint before the verdict's in ONE commit (with the run's next epoch for an
 * acceptance: accepted-launch.ts). So a handoff commits once, where the provisional `validating`
 * row cost a synced commit of its own before the validation could answer.
 *
 * The spec's order holds in substance: nothing is decided before it is recorded (the record is
 * the first write of the commit that decides it), and what recovery step 9 resumes is still every
 * submission the host recorded `validating`. A held one is not durable and was never answered:
 * a host that dies with it loses nothing (the extension sends the same tool call again: a new
 * submission, validated once; its prepared process leaves with the host). A held submission is
 * recorded `validating` on its own, as without a prepared process, when its verdict has not come
 * within HELD_SUBMISSION_MS or the call's wait, when its exchange is stopped (a cancel, a
 * shutdown), when its verdict is stale, or when another call for the same step comes meanwhile
 * (the same tool call sent again, another one): that call is then answered from the rows as
 * before, joining the one validation (one at a time per submission, never two). A process that
 * dies without a verdict rejects it: submission and rejection in one commit.
 */
import { NotFoundError, RefusedError } from "../state/errors.ts";
import type { StateStore } from "../state/store.ts";
import {
  afterGroupCommit,
  groupTransaction,
  inCommitGroup,
  writeTransaction,
} from "../state/transactions.ts";
import { crashPoint } from "../base/crash-point.ts";
import { readRunRow } from "../state/protected-write.ts";
import type {
  SubmitInteractionOptions,
  SubmitResult,
} from "../state/transitions/interaction-tool-calls.ts";
import {
  type Presentation,
  submitPresentedInteraction,
} from "../state/transitions/presented-submission.ts";
import type { AheadStart } from "./worker-messages/speculative-start.ts";

/** How long a held submission waits for its verdict before it is recorded `validating`. */
export const HELD_SUBMISSION_MS = 500;

/** What refuses a submission's write: the answer its call gets (command-errors.ts). */
export type Refusal = RefusedError | NotFoundError;

export interface HeldSubmission {
  readonly runId: string;
  readonly submissionId: string;
  /**
   * The run's committed revision before the submission's writes: what the facts sent with its
   * validate request are at (its own writes come again first in the verdict's commit).
   */
  readonly revisionBefore: number | null;
  /**
   * The next epoch's step its prepared process may propose ahead (aheadOfHeld names it): when
   * the submission is recorded alone, the revision its facts are current at moves past that write.
   */
  ahead?: AheadStart;
  /** True once recorded (alone, or with its verdict). */
  readonly durable: boolean;
  /** Why recording it was refused (the step moved on meanwhile): nothing of it is durable. */
  readonly refused: Refusal | null;
  /** Resolves once it is recorded or refused. */
  readonly settled: Promise<void>;
}

interface Held extends HeldSubmission {
  durable: boolean;
  refused: Refusal | null;
  /** Writes the submission in the caller's transaction; false (and `refused`) when refused. */
  write(): boolean;
  recorded(): void;
  /** Its write failed otherwise (a full disk): no longer the request's held submission. */
  abandoned(): void;
}

/** Per store: the held submission of each interactive request (at most one). */
const heldByStore = new WeakMap<StateStore, Map<string, Held>>();

/** The request's held submission, or undefined. */
export function heldSubmissionOf(
  store: StateStore,
  interactionId: string,
): HeldSubmission | undefined {
  return heldByStore.get(store)?.get(interactionId);
}

/**
 * Holds a submission if `validate` starts its validation now (validation.ts's `validateNow`,
 * given the held submission); null when it declines (nothing is held). `write` records it (the
 * same transition as when it arrived, under the id its request names); it may throw a refusal.
 */
export function holdSubmission(
  store: StateStore,
  init: {
    runId: string;
    interactionId: string;
    submissionId: string;
    revisionBefore: number | null;
    write(): unknown;
  },
  validate: (held: HeldSubmission) => Promise<void> | null,
): { held: HeldSubmission; decided: Promise<void> } | null {
  let byRequest = heldByStore.get(store);
  if (byRequest === undefined) heldByStore.set(store, byRequest = new Map());
  const requests = byRequest;
  let settle = () => {};
  const settled = new Promise<void>((resolve) => (settle = resolve));
  const done = () => {
    if (requests.get(init.interactionId) === held) requests.delete(init.interactionId);
    settle();
  };
  const held: Held = {
    runId: init.runId,
    submissionId: init.submissionId,
    revisionBefore: init.revisionBefore,
    durable: false,
    refused: null,
    settled,
    write() {
      try {
        init.write();
        return true;
      } catch (error) {
        if (!(error instanceof RefusedError || error instanceof NotFoundError)) throw error;
        held.refused = error;
        done();
        return false;
      }
    },
    recorded() {
      held.durable = true;
      done();
    },
    abandoned: () => done(),
  };
  const decided = validate(held);
  if (decided === null) return null;
  requests.set(init.interactionId, held);
  return { held, decided };
}

/**
 * The verdict's write with the held submission recorded first, in the same commit (a savepoint
 * of the caller's group, else a group of its own). `verdict` returns null when stale: then
 * neither is written and the submission stays held (its caller records it alone). Null too when
 * recording it is refused.
 */
export function withHeldRecorded<T>(
  store: StateStore,
  submission: HeldSubmission | undefined,
  verdict: () => T | null,
): T | null {
  if (submission === undefined || submission.durable) return verdict();
  const held = submission as Held;
  if (held.refused) return null;
  const both = (): T | null => {
    let result: T | null = null;
    try {
      writeTransaction(store, () => {
        if (!held.write()) return;
        crashPoint("host.heldSubmission.written");
        result = verdict();
        if (result === null) throw staleVerdict;
      });
    } catch (error) {
      if (error !== staleVerdict) throw error;
    }
    if (result !== null) afterGroupCommit(store, () => held.recorded());
    return result;
  };
  return inCommitGroup(store) ? both() : groupTransaction(store, both);
}

const staleVerdict = new Error("stale verdict");

/**
 * Names what the held submission's prepared process may propose ahead, as its validate request
 * is written (before that write may wait, so a hold that ends meanwhile moves it on:
 * recordHeldAlone). The submission's writes were read with the facts and rolled back: the facts
 * are current at the revision before them (they come again first in the verdict's commit, or in
 * their own). Only when they all went in the request: later pages are read after the rollback.
 */
export function aheadOfHeld(held: HeldSubmission, ahead: AheadStart, allFactsSent: boolean): void {
  if (ahead.factsRevision !== null) ahead.factsRevision = allFactsSent ? held.revisionBefore : null;
  (held as Held).ahead = ahead;
}

/**
 * Records the held submission `validating` on its own commit (its verdict is late, its exchange
 * ended without one, or the call's wait ended); a refusal is kept in `refused`. Idempotent.
 */
export function recordHeldAlone(store: StateStore, submission: HeldSubmission): void {
  const held = submission as Held;
  if (held.durable || held.refused) return;
  const before = readRunRow(store, held.runId)?.revision;
  try {
    if (!held.write()) return;
  } catch (error) {
    held.abandoned();
    throw error;
  }
  // The same writes as when its facts were read: they stay current past them, unless something
  // else changed the run meanwhile.
  const { ahead } = held;
  if (ahead && ahead.factsRevision === before) {
    ahead.factsRevision = readRunRow(store, held.runId)?.revision ?? null;
  }
  held.recorded();
  crashPoint("host.heldSubmission.recorded");
}

/** The rollback of a submission's transaction whose submission is held. */
const holdIt = new Error("held");

/**
 * Writes the submission, or holds it: when it is new and the run's prepared process validates it
 * at once (`validateNow`, with the submission read in this transaction), the transaction is
 * rolled back and the submission recorded with its verdict. Any other outcome commits here.
 */
export function submitOrHold(
  store: StateStore,
  /** The supervision's `validateNow`. */
  validateNow: (submissionId: string, held: HeldSubmission) => Promise<void> | null,
  opts: SubmitInteractionOptions,
  presentation: Presentation | undefined,
): { result: SubmitResult } | { held: HeldSubmission; decided: Promise<void> } {
  if (inCommitGroup(store)) {
    return { result: submitPresentedInteraction(store, opts, presentation) };
  }
  const revisionBefore = readRunRow(store, opts.runId)?.revision ?? null;
  let holding: { held: HeldSubmission; decided: Promise<void> } | undefined;
  try {
    const result = submitPresentedInteraction(store, opts, presentation, (written) => {
      if (written.kind !== "new") return;
      const { submissionId } = written;
      holding = holdSubmission(store, {
        runId: opts.runId,
        interactionId: opts.interactionId,
        submissionId,
        revisionBefore,
        // Checked as it arrived: a write meanwhile (an update) does not refuse it.
        write: () =>
          submitPresentedInteraction(
            store,
            { ...opts, expectedRevision: undefined, submissionId },
            presentation,
          ),
      }, (held) => validateNow(submissionId, held)) ?? undefined;
      if (holding === undefined) return;
      // Killed here: the request left, nothing of the submission is durable.
      crashPoint("host.submission.validationSent");
      throw holdIt;
    });
    return { result };
  } catch (error) {
    if (error !== holdIt || holding === undefined) throw error;
    return holding;
  }
}
