/**
 * A submission that carries its step's presentation (the session entry the extension had not
 * had recorded yet): the presentation is recorded first, as `presentInteraction` records it, and
 * the submission after it, as savepoints of one commit. So a step is never accepted before the
 * entry that showed it is stored, and the model's submit waits for no separate presentation
 * round trip. A refused presentation (another entry recorded meanwhile, the step no longer the
 * session's current one) leaves the submission to its own checks, as a failed
 * `interaction.present` before it would. Either kind of submission may be given a step to run
 * before its COMMIT (`beforeCommit`): the host starts a prepared process's validation there.
 */
import { crashPoint } from "../../base/crash-point.ts";
import { RefusedError } from "../errors.ts";
import type { StateStore } from "../store.ts";
import { groupTransaction, inCommitGroup } from "../transactions.ts";
import { presentInteraction } from "./interaction-presentation.ts";
import {
  submitInteraction,
  type SubmitInteractionOptions,
  type SubmitResult,
} from "./interaction-tool-calls.ts";

export interface Presentation {
  sessionEntryId: string;
  replaces?: string | null;
}

export function submitPresentedInteraction(
  store: StateStore,
  opts: SubmitInteractionOptions,
  presentation: Presentation | undefined,
  /**
   * Runs after the writes, inside the transaction, before its COMMIT (the host writes the
   * validate request to the run's prepared process there); a throw rolls everything back.
   */
  beforeCommit?: (result: SubmitResult) => void,
): SubmitResult {
  if (presentation === undefined && beforeCommit === undefined) {
    return submitInteraction(store, opts);
  }
  const write = () => {
    const result = presentation === undefined
      ? submitInteraction(store, opts)
      : presentedWrite(store, opts, presentation);
    beforeCommit?.(result);
    return result;
  };
  if (inCommitGroup(store)) return write();
  const result = groupTransaction(store, write);
  if (presentation !== undefined) crashPoint("host.presentedSubmission.afterCommit");
  return result;
}

function presentedWrite(
  store: StateStore,
  opts: SubmitInteractionOptions,
  presentation: Presentation,
): SubmitResult {
  let presented = false;
  try {
    presentInteraction(store, {
      runId: opts.runId,
      interactionId: opts.interactionId,
      sessionId: opts.sessionId,
      sessionEntryId: presentation.sessionEntryId,
      replaces: presentation.replaces,
      expectedRevision: opts.expectedRevision,
    });
    presented = true;
  } catch (error) {
    if (!(error instanceof RefusedError)) throw error;
  }
  // The expected revision was the run's before this command: checked by the presentation.
  const result = submitInteraction(
    store,
    presented ? { ...opts, expectedRevision: undefined } : opts,
  );
  // Crash tests: both writes done, neither durable yet.
  crashPoint("host.presentedSubmission.beforeCommit");
  return result;
}
