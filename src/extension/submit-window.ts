/**
 * The presenter's view of the submit tool calls in flight, and of the host's pushes meanwhile.
 * A submit's answer names the session's next step (claimed by the host), so a claim started by
 * a push while the call runs would only queue ahead of that step's presentation and hold it up
 * by a round trip: such a push is held until the last submit returns, and then needs a claim
 * only when it may be newer than the step the answer named (the session cursor the host read
 * before that claim).
 */
export class SubmitWindow {
  /** Submit tool calls in flight, by interaction id. */
  readonly #submitting = new Map<string, number>();
  /** The session's cursor as of the newest step a submit's answer named. */
  #knownCursor: number | null = null;
  /** The last push's cursor. */
  #lastPush: number | null = null;
  /** A push held back while a submit was in flight: its highest cursor, null for a tick. */
  #held: { cursor: number | null } | null = null;

  has(interactionId: string): boolean {
    return this.#submitting.has(interactionId);
  }

  /**
   * A submit of `interactionId` starts; the returned function ends it and says whether a push
   * held meanwhile still needs a claim.
   */
  enter(interactionId: string): () => boolean {
    this.#submitting.set(interactionId, (this.#submitting.get(interactionId) ?? 0) + 1);
    return () => {
      const left = (this.#submitting.get(interactionId) ?? 1) - 1;
      if (left > 0) this.#submitting.set(interactionId, left);
      else this.#submitting.delete(interactionId);
      const held = this.#held;
      if (this.#submitting.size > 0 || !held) return false;
      this.#held = null;
      return !this.known(held.cursor);
    };
  }

  /** A submit's answer named a step claimed at `cursor`. */
  learn(cursor: number): void {
    this.#knownCursor = Math.max(cursor, this.#knownCursor ?? 0);
  }

  /** A push at `cursor` brings nothing newer than the step a submit's answer named. */
  known(cursor: number | null | undefined): boolean {
    if (cursor === undefined || cursor === null) return false;
    // The cursor sums the session's runs' revisions: a prune (or a state reset) lowers it, and
    // the cursor a submit's answer named then says nothing about the pushes after it.
    if (this.#lastPush !== null && cursor < this.#lastPush) this.#knownCursor = null;
    this.#lastPush = cursor;
    return this.#knownCursor !== null && cursor <= this.#knownCursor;
  }

  /** Holds a push (`cursor`, none for a tick) while a submit is in flight; false when none is. */
  hold(cursor: number | undefined): boolean {
    if (this.#submitting.size === 0) return false;
    const held = this.#held;
    this.#held = {
      cursor: cursor === undefined || held?.cursor === null
        ? null
        : Math.max(cursor, held?.cursor ?? 0),
    };
    return true;
  }
}
