/**
 * This extension's messages on the session's current branch, kept up to date incrementally. The
 * branch is the path from the session's root to its leaf, and Pi only appends at the leaf: while
 * the newest entry read before is still on the branch, the entries before it are the same, so a
 * look walks back from the leaf only to that entry (a step handoff appends three or four). A
 * branch without it (a `/tree` move, another session manager) is read whole, as before.
 * Each look used to copy the whole branch (`getBranch`), several times a step, and a long
 * session's branch holds thousands of entries.
 */
import { addUsage, EMPTY_USAGE, type StepUsage, usageOfPiMessage } from "../protocol/step-usage.ts";
import type { PiSessionEntry, PiSessionManager } from "./pi-api.ts";
import { isOurEntry, type OurEntry } from "./session-messages.ts";

export class BranchIndex {
  readonly #session: () => PiSessionManager;
  /** The session manager the entries below were read from. */
  #manager: PiSessionManager | null = null;
  /** The newest entry read (null: nothing read yet, or the branch was empty). */
  #upTo: string | null = null;
  /** This extension's entries from the root to `#upTo`, oldest first. */
  #ours: OurEntry[] = [];

  constructor(session: () => PiSessionManager) {
    this.#session = session;
  }

  /** This extension's messages on the current branch, oldest first. */
  ours(): readonly OurEntry[] {
    const session = this.#session();
    const leaf = session.getLeafId();
    if (session === this.#manager && leaf === this.#upTo) return this.#ours;
    const known = session === this.#manager ? this.#upTo : null;
    const fresh: OurEntry[] = [];
    let id = leaf;
    while (id !== null && id !== known) {
      const entry = session.getEntry(id);
      // An entry without a parent link is not one of Pi's tree entries: read the branch whole.
      if (!entry || entry.parentId === undefined) return this.#reread(session, leaf);
      if (isOurEntry(entry)) fresh.push(entry);
      id = entry.parentId;
    }
    fresh.reverse();
    // Walked to the root without meeting the newest entry read: the branch changed.
    if (id === null) this.#ours = fresh;
    else this.#ours.push(...fresh);
    this.#manager = session;
    this.#upTo = leaf;
    return this.#ours;
  }

  /**
   * The usage Pi recorded on every assistant message of the branch after `entry` (one of
   * `ours()`, so on the branch), oldest first as they were added before.
   */
  usageAfter(entry: PiSessionEntry): StepUsage | undefined {
    const session = this.#session();
    const found: StepUsage[] = [];
    for (let id = session.getLeafId(); id !== entry.id;) {
      const at = id === null ? undefined : session.getEntry(id);
      if (!at || at.parentId === undefined) return usageOfBranch(session.getBranch(), entry.id);
      if (at.type === "message") {
        const usage = usageOfPiMessage(at.message);
        if (usage !== null) found.push(usage);
      }
      id = at.parentId;
    }
    let total: StepUsage | undefined;
    for (let i = found.length - 1; i >= 0; i--) total = addUsage(total ?? EMPTY_USAGE, found[i]);
    return total;
  }

  #reread(session: PiSessionManager, leaf: string | null): readonly OurEntry[] {
    this.#ours = session.getBranch().filter(isOurEntry);
    this.#manager = session;
    this.#upTo = leaf;
    return this.#ours;
  }
}

/** The same sum from the whole branch (a session manager without parent links). */
function usageOfBranch(branch: PiSessionEntry[], after: string): StepUsage | undefined {
  const at = branch.findIndex((entry) => entry.id === after);
  if (at === -1) return undefined;
  let total: StepUsage | undefined;
  for (let i = at + 1; i < branch.length; i++) {
    if (branch[i].type !== "message") continue;
    const usage = usageOfPiMessage(branch[i].message);
    if (usage !== null) total = addUsage(total ?? EMPTY_USAGE, usage);
  }
  return total;
}
