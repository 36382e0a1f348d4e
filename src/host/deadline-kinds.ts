/**
 * Every kind of deadline the host deadline timer enforces while no worker runs. Adding a kind is
 * one `DeadlineKind` in its own file (queries in src/state) and one line here.
 */
import type { DeadlineKind } from "./deadline-timer.ts";
import { decisionDefaultDeadline, waitTimeoutDeadline } from "./decision-timeouts.ts";
import { interactionTimeoutDeadline } from "./interaction-timeouts.ts";

export const DEADLINE_KINDS: readonly DeadlineKind[] = [
  decisionDefaultDeadline,
  waitTimeoutDeadline,
  interactionTimeoutDeadline,
];
