/**
 * Presents the session's current interactive request: one at a time, in creation order (the
 * host's `interaction.claim` picks it). A request already shown in this session branch is
 * adopted, not sent again: its stored entry id is on the branch, or a step message naming it is
 * (Pi died between sending and recording). Otherwise the step message goes out with
 * `pi.sendMessage` (displayed, starting a turn; `steer` while Pi streams, `followUp` when idle)
 * and its entry id is recorded with `interaction.present` once Pi has appended the entry.
 *
 * When the agent settles without a submission the host is told (`interaction.remind`) and
 * answers with a reminder to show, or fails the attempt after the second one.
 *
 * A step the host closed under a running turn stops that turn; a message for the next step
 * waits until the stopped run has settled: Pi keeps a message steered into a run it is aborting
 * in its queue, unsent, until some later run, and that run's `aborted` settle is not an Escape.
 */
import { randomUUID } from "node:crypto";
import { crashPoint } from "../base/crash-point.ts";
import type { BranchIndex } from "./branch-index.ts";
import { stepUsageOnBranch } from "./branch-usage.ts";
import type { PiExtensionApi, PiSessionManager } from "./pi-api.ts";
import {
  closedElsewhereNotice,
  heldNotice,
  modelFailedNotice,
  noSubmissionNotice,
} from "./presenter-text.ts";
import type { ClaimedInteraction, ClaimReceipt, SessionOps } from "./session-ops.ts";
import { branchHasEntry, contractBlockOf, findStepEntry } from "./session-messages.ts";
import { type Outgoing, stepMessage } from "./step-message.ts";
import { SubmitWindow } from "./submit-window.ts";

export interface PresenterHost {
  pi: PiExtensionApi;
  ops: SessionOps;
  session(): PiSessionManager;
  /** This extension's messages on the session's branch. */
  branch: BranchIndex;
  isIdle(): boolean;
  hasPendingMessages(): boolean;
  /** Stops the agent's current turn. */
  abort(): void;
  /** A human-facing notice (never model context). */
  notify(message: string, level: "info" | "warning" | "error"): void;
}

interface Current {
  interaction: ClaimedInteraction;
  /** The entry id recorded with the host (or adopted), once known. */
  entryId: string | null;
  /**
   * The presentation this process sent and has not yet recorded; `carried`: the entry a submit
   * in flight carries to the host (no `interaction.present` of its own meanwhile).
   */
  unrecorded: { presentationId: string; replaces: string | null; carried?: string } | null;
  /** An agent run started since the last step/reminder message went out. */
  turnSinceSend: boolean;
  /** A submission of this request was accepted: nothing more to present or remind. */
  accepted: boolean;
  /** Escape aborted the turn: no reminders until `/workflow resume`. */
  held: boolean;
  /** The model's own tool call is cancelling this run: its turn is not stopped for it. */
  closingHere: boolean;
  /** A message held back until the run this presenter stopped has settled. */
  deferred: Outgoing | null;
}

export class Presenter {
  #current: Current | null = null;
  #chain: Promise<void> = Promise.resolve();
  #lastClaim: ClaimReceipt | null = null;
  /** Between agent_start and agent_settled. */
  #agentRunning = false;
  readonly #submits = new SubmitWindow();
  /** This presenter aborted the agent's run and that run has not settled yet. */
  #stopping = false;
  /** Pi's error when the agent run's latest assistant message failed (after Pi's retries). */
  #modelError: string | null = null;

  readonly #host: PresenterHost;

  constructor(host: PresenterHost) {
    this.#host = host;
  }

  /** The request on screen (or being presented), if any. */
  get current(): ClaimedInteraction | null {
    return this.#current?.interaction ?? null;
  }

  /** The run whose step Escape put on hold in this session, if any. */
  get heldRunId(): string | null {
    return this.#current?.held ? this.#current.interaction.runId : null;
  }

  get lastClaim(): ClaimReceipt | null {
    return this.#lastClaim;
  }

  /** Claims and presents, serialized: overlapping triggers (timer, push, settle) run one by one. */
  refresh(): Promise<void> {
    const next = this.#chain.then(() => this.#refresh());
    this.#chain = next.catch(() => {});
    return next;
  }

  /**
   * The host's push (`cursor`: the session's cursor it reported) or the tick (none): claims and
   * presents, unless the push brings nothing newer than the step a submit's answer named. While
   * a submit is in flight the claim waits for it: its answer names the next step, and a claim
   * ahead of it in the chain would hold that step's presentation up by a round trip.
   */
  wake(cursor?: number): Promise<void> {
    if (this.#submits.known(cursor) || this.#submits.hold(cursor)) return Promise.resolve();
    return this.refresh();
  }

  /** Records the entry id of a sent presentation once Pi has appended it. */
  recordSent(): Promise<void> {
    if (!this.#current?.unrecorded) return Promise.resolve();
    const next = this.#chain.then(() => this.#recordSent());
    this.#chain = next.catch(() => {});
    return next;
  }

  noteAgentStart(): void {
    this.#agentRunning = true;
    this.#modelError = null;
    if (this.#current) this.#current.turnSinceSend = true;
  }

  /**
   * A submit tool call of `interactionId` is in flight until the returned function is called:
   * the host may settle the request (and a push show the next step) before the call returns,
   * and that is not a step closed elsewhere.
   */
  noteSubmitting(interactionId: string): () => void {
    const leave = this.#submits.enter(interactionId);
    return () => {
      if (leave()) void this.refresh().catch(() => {});
    };
  }

  /**
   * The model's tool call is about to cancel `runId`: when that closes the step on screen, the
   * turn that asked for it goes on to report (a step closed by anyone else stops the turn
   * working on it). Returns the undo for a cancel that failed.
   */
  noteClosingHere(runId: string): () => void {
    const current = this.#current;
    if (!current || current.interaction.runId !== runId) return () => {};
    current.closingHere = true;
    return () => {
      current.closingHere = false;
    };
  }

  noteAccepted(interactionId: string): void {
    if (this.#current?.interaction.interactionId === interactionId) this.#current.accepted = true;
  }

  /**
   * The session entry presenting `interactionId` when Pi has appended it but the host has not
   * recorded it yet: a submit carries it (the host records it first, in the submission's commit)
   * instead of waiting for its own `interaction.present`, which is not sent while the submit is
   * in flight. Undefined when there is none to carry. Pair with `presentationCarried`.
   */
  carryPresentation(
    interactionId: string,
  ): { sessionEntryId: string; replaces: string | null } | undefined {
    const current = this.#current;
    const pending = current?.unrecorded;
    if (!current || !pending || current.interaction.interactionId !== interactionId) return;
    const entry = findStepEntry(this.#host.branch.ours(), interactionId, pending.presentationId);
    if (!entry) return;
    pending.carried = entry.id;
    return { sessionEntryId: entry.id, replaces: pending.replaces };
  }

  /** The submit that carried the entry got the host's answer (`answered`) or failed. */
  presentationCarried(interactionId: string, answered: boolean): void {
    const current = this.#current;
    const pending = current?.unrecorded;
    if (!current || pending?.carried === undefined) return;
    if (current.interaction.interactionId !== interactionId) return;
    if (answered) {
      current.entryId = pending.carried;
      current.unrecorded = null;
    } else delete pending.carried;
  }

  /** Pi's `message_end`: remembers whether the latest assistant message ended on an error. */
  noteMessageEnd(event: unknown): void {
    const message = (event as { message?: Record<string, unknown> } | null)?.message;
    if (message?.role !== "assistant") return;
    this.#modelError = message.stopReason === "error"
      ? String(message.errorMessage ?? "").replace(/\s+/g, " ").trim().slice(0, 300) ||
        "no reason given"
      : null;
  }

  /** The agent settled: remind (or fail the attempt) when the step went unanswered. */
  settled(aborted: boolean): Promise<void> {
    this.#agentRunning = false;
    const stopped = this.#stopping;
    this.#stopping = false;
    const modelError = this.#modelError;
    const next = this.#chain.then(() => this.#settled(aborted, stopped, modelError));
    this.#chain = next.catch(() => {});
    return next;
  }

  /** `/workflow resume`: lift an Escape hold and show the step's contract again. */
  resumeHeld(): boolean {
    const current = this.#current;
    if (!current?.held) return false;
    current.held = false;
    this.#send(current, "resume", { display: true });
    return true;
  }

  /**
   * A submit's answer named the session's next step (claimed by the host when the session's
   * cursor was `cursor`): present it now, serialized like `refresh`. Sent while the submit tool
   * call still runs, it is steered into the same agent run, so the model does the next step
   * without ending a turn first.
   */
  presentClaimed(interaction: ClaimedInteraction, cursor?: number): Promise<void> {
    const next = this.#chain.then(async () => {
      await this.#show(interaction);
      // Only once shown: after a failure the next push claims again.
      if (cursor !== undefined) this.#submits.learn(cursor);
    });
    this.#chain = next.catch(() => {});
    return next;
  }

  async #refresh(): Promise<void> {
    const claim = await this.#host.ops.claim();
    this.#lastClaim = claim;
    await this.#show(claim.interaction);
  }

  async #show(interaction: ClaimedInteraction | null): Promise<void> {
    const current = this.#current;
    if (current && current.interaction.interactionId !== interaction?.interactionId) {
      this.#closedElsewhere(current);
    }
    if (!interaction) {
      this.#current = null;
      return;
    }
    if (current && current.interaction.interactionId === interaction.interactionId) {
      current.interaction = interaction;
      await this.#recordSent();
      return;
    }
    this.#current = await this.#adoptOrSend(interaction);
  }

  /**
   * The host closed the step without an accepted submission (its deadline passed, the run was
   * cancelled or failed): a turn still working on it is stopped.
   */
  #closedElsewhere(current: Current): void {
    this.#current = null;
    if (current.accepted || current.closingHere) return;
    if (this.#submits.has(current.interaction.interactionId)) return;
    // A submission was validating when this process last saw the step (one sent by a Pi that
    // died meanwhile): a step closed now was most likely closed by its acceptance, so it is not
    // announced as dropped; the run's own end is announced if it ended instead.
    if (current.interaction.submission?.status === "validating") return;
    this.#host.notify(closedElsewhereNotice(current.interaction.contract.step), "info");
    if (current.turnSinceSend && this.#agentRunning) {
      this.#stopping = true;
      this.#host.abort();
    }
  }

  async #adoptOrSend(interaction: ClaimedInteraction): Promise<Current> {
    const session = this.#host.session();
    const stored = interaction.presentation.sessionEntryId;
    const current: Current = {
      interaction,
      entryId: null,
      unrecorded: null,
      turnSinceSend: false,
      accepted: false,
      held: false,
      closingHere: false,
      deferred: null,
    };
    if (stored !== null && branchHasEntry(session, stored)) {
      current.entryId = stored;
      this.#continueAdopted(current);
      return current;
    }
    const shown = findStepEntry(this.#host.branch.ours(), interaction.interactionId);
    if (shown) {
      await this.#host.ops.present(interaction, shown.id, stored);
      current.entryId = shown.id;
      this.#continueAdopted(current);
      return current;
    }
    const presentationId = randomUUID();
    current.unrecorded = { presentationId, replaces: stored };
    this.#send(current, "step", { display: true, presentationId });
    return current;
  }

  /**
   * A step already on screen from an earlier Pi process: nobody is working on it now, so when
   * Pi is idle a hidden nudge (no second visible message) asks the model to continue it.
   */
  #continueAdopted(current: Current): void {
    if (current.interaction.submission?.status === "validating") return;
    if (!this.#host.isIdle() || this.#host.hasPendingMessages()) return;
    this.#send(current, "resume", { display: false });
  }

  async #recordSent(): Promise<void> {
    const current = this.#current;
    const pending = current?.unrecorded;
    if (!current || !pending || pending.carried !== undefined) return;
    const entry = findStepEntry(
      this.#host.branch.ours(),
      current.interaction.interactionId,
      pending.presentationId,
    );
    if (!entry) return; // Not appended yet (queued behind a streaming turn).
    // Crash tests: Pi dies with the step shown but its entry not yet recorded by the host.
    crashPoint("extension.step.beforePresent");
    await this.#host.ops.present(current.interaction, entry.id, pending.replaces);
    current.entryId = entry.id;
    current.unrecorded = null;
  }

  async #settled(aborted: boolean, stopped: boolean, modelError: string | null): Promise<void> {
    await this.#recordSent();
    const current = this.#current;
    if (!current || current.accepted) return;
    if (stopped) {
      // The run stopped for a closed step is over: the step that came meanwhile goes out now.
      const deferred = current.deferred;
      current.deferred = null;
      if (deferred) this.#send(current, deferred.kind, deferred.options);
      return;
    }
    if (aborted) {
      current.held = true;
      this.#host.notify(heldNotice(current.interaction.contract.step), "info");
      return;
    }
    if (current.held || !current.turnSinceSend) return;
    if (modelError !== null) {
      // The model failed, not the agent: a reminder would meet the same error at once and
      // spend the step's reminders on an outage. Hold it as Escape does; the deadline still runs.
      current.held = true;
      this.#host.notify(
        modelFailedNotice(current.interaction.contract.step, modelError),
        "warning",
      );
      return;
    }
    if (!this.#host.isIdle() || this.#host.hasPendingMessages()) return;
    const reminder = current.interaction.reminders + 1;
    // The turns that went unanswered count towards the step's usage.
    const used = stepUsageOnBranch(this.#host.branch, current.interaction.interactionId);
    const answer = await this.#host.ops.remind(current.interaction, reminder, used);
    if (answer.action === "wait") return;
    current.interaction = { ...current.interaction, reminders: reminder };
    if (answer.action === "failed") {
      this.#host.notify(
        noSubmissionNotice(current.interaction.contract.step, answer.error?.message),
        "warning",
      );
      this.#current = null;
      return;
    }
    this.#send(current, "reminder", {
      display: true,
      text: answer.message ?? contractBlockOf(current.interaction.contract.message),
      reminder,
    });
  }

  #send(current: Current, kind: Outgoing["kind"], options: Outgoing["options"]): void {
    if (this.#stopping) {
      current.deferred = { kind, options };
      return;
    }
    // Sent while Pi streams (steer), the message is handled by the run in progress; sent while
    // idle, it starts a run, whose agent_start marks it.
    const idle = this.#host.isIdle();
    current.turnSinceSend = !idle;
    this.#host.pi.sendMessage(stepMessage(current.interaction, { kind, options }), {
      triggerTurn: true,
      deliverAs: idle ? "followUp" : "steer",
    });
  }
}
