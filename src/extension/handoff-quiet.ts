/**
 * The quiet of a step handoff: when the session's background work may run. The host's push for
 * a handoff's commits comes while Pi turns the submit's tool result into the next step's request,
 * and what the session does with it (a `run.status` for the progress display, the long poll's
 * re-arm: two host calls, their answers decoded and drawn) would share Pi's event loop, and the
 * host, with that path. So a push that comes from a submit's start on waits (`ended`) until Pi
 * waits itself: for the host, once the next submit's request went out (a model that answers at
 * once submits the next step within milliseconds), or for the model, `QUIET_LINGER_MS` after its
 * next reply started (Pi's request went out); at the latest when the agent settles or
 * `QUIET_MAX_MS` after the last submit started. The submit's own answer names the next step and
 * the session's cursor (submit-window.ts): nothing a push brings is needed sooner.
 */

/** After the model's next reply started, how long the parked work still waits for a submit. */
export const QUIET_LINGER_MS = 200;
/** The longest a push waits (the once-a-second tick runs regardless). */
export const QUIET_MAX_MS = 1_000;

/** One submit tool call in the quiet (`HandoffQuiet.enter`). */
export interface QuietSubmit {
  /**
   * This submit was accepted and its answer named no next step (a compute node runs first, say):
   * the next step comes by the host's push, which must not wait once the submits end.
   */
  noNextStep(): void;
  /** This submit's answer named the next step, presented with it: the push brings none. */
  nextStepPresented(): void;
  /** The call ended (idempotent). */
  leave(): void;
}

interface Waiter {
  /** The quiet it waits for. */
  quiet: number;
  resolve(): void;
}

export class HandoffQuiet {
  /** Submit tool calls in flight. */
  #submits = 0;
  /** The current quiet's number (a new one per submit); valid while `#timer` is set. */
  #quiet = 0;
  /** Every submit ended: the model's next reply ends the quiet (after the linger). */
  #afterSubmit = false;
  /**
   * Some submit of the overlapping ones named no next step; some presented one. Overlapping
   * submits are calls for the same pending step (one is accepted at most), so a refused one that
   * ends last says nothing: the quiet ends at once when one named no next step and none presented
   * one. Cleared when the quiet ends and when a submit starts with none in flight (a new step).
   */
  #noNext = false;
  #presented = false;
  /** When the current quiet ends at the latest (`QUIET_MAX_MS` after the last submit started). */
  #maxAt = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #waiters: Waiter[] = [];

  /** True from a submit's start until its quiet ends. */
  get active(): boolean {
    return this.#timer !== null;
  }

  /**
   * A submit tool call starts (call it right before sending the submit). Work parked in an
   * earlier quiet runs after this turn of the event loop, when the submit's request has gone out
   * and Pi waits for the host's answer. The quiet ends with the last submit in flight at once
   * when one of the submits in flight with it named no next step and none presented one.
   */
  enter(): QuietSubmit {
    const earlier = this.active ? this.#quiet : null;
    this.#quiet++;
    // The first submit for a step: what the previous step's submits said is over.
    if (this.#submits === 0) this.#noNext = this.#presented = false;
    this.#submits++;
    this.#afterSubmit = false;
    this.#maxAt = Date.now() + QUIET_MAX_MS;
    this.#arm(QUIET_MAX_MS);
    if (earlier !== null) setImmediate(() => this.#release(earlier));
    let left = false;
    return {
      noNextStep: () => {
        this.#noNext = true;
      },
      nextStepPresented: () => {
        this.#presented = true;
      },
      leave: () => {
        if (left) return;
        left = true;
        this.#submits--;
        if (this.#submits > 0) return;
        if (this.#noNext && !this.#presented) this.#end();
        else this.#afterSubmit = true;
      },
    };
  }

  /**
   * An assistant message started: Pi's request after the last submit went out. Only the first
   * reply after it lingers, and never past the quiet's latest end.
   */
  noteAssistantStart(): void {
    if (!this.#afterSubmit || !this.active) return;
    this.#afterSubmit = false;
    this.#arm(Math.max(0, Math.min(QUIET_LINGER_MS, this.#maxAt - Date.now())));
  }

  /** The agent settled: no request follows. */
  noteSettled(): void {
    if (this.#submits === 0) this.#end();
  }

  /** The session closes: nothing waits any more. */
  close(): void {
    this.#end();
  }

  /** Resolves once the current quiet is over (at once when there is none). */
  ended(): Promise<void> {
    if (!this.active) return Promise.resolve();
    return new Promise((resolve) => this.#waiters.push({ quiet: this.#quiet, resolve }));
  }

  #arm(ms: number): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#end(), ms);
    this.#timer.unref?.();
  }

  /** Releases the work parked in quiets up to `quiet`. */
  #release(quiet: number): void {
    const due = this.#waiters.filter((waiter) => waiter.quiet <= quiet);
    this.#waiters = this.#waiters.filter((waiter) => waiter.quiet > quiet);
    for (const waiter of due) waiter.resolve();
  }

  #end(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.#afterSubmit = false;
    this.#noNext = this.#presented = false;
    this.#release(this.#quiet);
  }
}
