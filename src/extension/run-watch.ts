/**
 * Follows this session's run: reads `run.status` when the host reports a change (and on the
 * once-a-second tick), draws the footer status and the progress widget, shows a run waiting on a
 * person once (a human decision or checkpoint message, no model turn), and notices the end of
 * the run, which releases the session for the next one.
 */
import type { HostClient } from "../client/host-client.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import {
  type AttemptSummary,
  DEFAULT_STATUS_ATTEMPTS,
  type RunSummary,
} from "../protocol/run-operations.ts";
import type { PiExtensionApi, PiSessionManager, PiUi } from "./pi-api.ts";
import { decisionText, type Waiting } from "./decision-text.ts";
import { statusLine, TERMINAL_RUN_STATES, widgetLines } from "./progress-view.ts";
import { hasDecisionEntry, MESSAGE_DETAILS_SCHEMA, MESSAGE_TYPE } from "./session-messages.ts";

type StatusReceipt = OperationReceipt<"run.status">;

export const WIDGET_KEY = "pi-workflows";
export const STATUS_KEY = "pi-workflows";
/** A finished run's widget stays this long. */
const FINISHED_WIDGET_MS = 60_000;
const MAX_ENDED = 64;

export interface RunWatchHost {
  pi: PiExtensionApi;
  client: HostClient;
  ui(): PiUi | null;
  session(): PiSessionManager;
  /** Status detail of a node when this session knows it (the current step's contract). */
  detailFor(nodeId: string): string | null;
}

export class RunWatch {
  #runId: string | null = null;
  #finishedAt: number | null = null;
  #busy: Promise<void> | null = null;
  #last: RunSummary | null = null;
  /** Decisions shown by this process (Pi may append the entry later). */
  #shown = new Set<string>();
  /** Followed from the session branch after a restart: an already ended run ends quietly. */
  #adopted = false;
  /**
   * Runs seen in a terminal state (which is final). A claim or poll read before the end may
   * still name one; following it again would announce its end again, once per stale read.
   */
  readonly #ended = new Set<string>();
  /**
   * Every attempt of the followed run, by sequence, as of the last read, when it has at most a
   * plain read's page of them (null otherwise): the next read asks only for the attempts after
   * the first open or interrupted one (`attemptsAfter`): an attempt that ended otherwise never
   * changes (an interrupted one's usage can still be recovered). Each read of the
   * whole run was on the host's and on Pi's loop during every step handoff, growing with the run.
   */
  #attempts: AttemptSummary[] | null = null;

  readonly #host: RunWatchHost;

  constructor(host: RunWatchHost) {
    this.#host = host;
  }

  /** The session's active (non-terminal) run, as far as this session knows. */
  get activeRunId(): string | null {
    return this.#finishedAt === null ? this.#runId : null;
  }

  /** The run this session followed last, finished or not (for `status` without a run id). */
  get lastRunId(): string | null {
    return this.#runId;
  }

  get lastSummary(): RunSummary | null {
    return this.#last;
  }

  follow(runId: string): void {
    if (this.#ended.has(runId)) return;
    if (this.#runId === runId && this.#finishedAt === null) return;
    this.#runId = runId;
    this.#finishedAt = null;
    this.#last = null;
    this.#adopted = false;
    this.#attempts = null;
  }

  /**
   * After a Pi restart: follow the run this session's branch last showed (a step, decision or
   * checkpoint message names it), so a run waiting on a person is known again without a run id.
   * A run that ended meanwhile is dropped without a notice or widget. Never replaces a run the
   * session already follows.
   */
  adopt(runId: string): void {
    if (this.#runId !== null) return;
    this.follow(runId);
    this.#adopted = true;
  }

  /** Reads the run once (overlapping calls share one read). */
  refresh(now: number = Date.now()): Promise<void> {
    if (this.#busy) return this.#busy;
    this.#busy = this.#refresh(now).finally(() => (this.#busy = null));
    return this.#busy;
  }

  async #refresh(now: number): Promise<void> {
    const runId = this.#runId;
    if (!runId) return;
    if (this.#finishedAt !== null) {
      if (now - this.#finishedAt >= FINISHED_WIDGET_MS) this.clear();
      return;
    }
    const { status, attempts } = await this.#read(runId);
    if (this.#runId !== runId) return;
    const adopted = this.#adopted;
    this.#adopted = false;
    if (TERMINAL_RUN_STATES.has(status.run.state)) this.#noteEnded(runId);
    if (adopted && TERMINAL_RUN_STATES.has(status.run.state)) {
      this.clear();
      return;
    }
    this.#last = status.run;
    const details: Record<string, string | null> = {};
    for (const attempt of attempts) {
      details[attempt.nodeId] = this.#host.detailFor(attempt.nodeId);
    }
    const input = {
      run: status.run,
      attempts,
      details,
      updates: status.updates ?? [],
      now,
    };
    const ui = this.#host.ui();
    ui?.setWidget(WIDGET_KEY, widgetLines(input));
    ui?.setStatus(STATUS_KEY, statusLine(input));
    const waiting = status.waiting;
    if (waiting) this.#showWaiting(runId, waiting);
    if (TERMINAL_RUN_STATES.has(status.run.state)) {
      this.#finishedAt = now;
      this.#announceEnd(status.run);
    }
  }

  /**
   * The run's status and all its attempts it names: after the first open attempt known, added
   * to the ended ones before it, or the run's last ones (the first read, a run past one page, a
   * read that did not add up), as a plain read returns them.
   */
  async #read(runId: string): Promise<{ status: StatusReceipt; attempts: AttemptSummary[] }> {
    const known = this.#attempts;
    const after = known === null ? undefined : cursorOf(known);
    const status = await this.#host.client.call("run.status", {
      runId,
      payload: { includeUpdates: true, ...(after === undefined ? {} : { attemptsAfter: after }) },
    });
    const page = status.attempts ?? [];
    const attempts = after === undefined
      ? page
      : [...known!.filter((a) => a.sequence <= after), ...page];
    const whole = attempts.length === status.attemptCount &&
      attempts.length <= DEFAULT_STATUS_ATTEMPTS;
    if (this.#runId !== runId) return { status, attempts };
    this.#attempts = whole ? attempts : null;
    // More attempts came than one page holds: read the run's last ones, as a plain read does.
    return whole || after === undefined ? { status, attempts } : this.#read(runId);
  }

  #noteEnded(runId: string): void {
    this.#ended.add(runId);
    // Bounded: only a read that raced this run's end can name it, and that is soon after it.
    if (this.#ended.size > MAX_ENDED) this.#ended.delete(this.#ended.values().next().value!);
  }

  #showWaiting(runId: string, waiting: Waiting): void {
    if (this.#shown.has(waiting.decisionId)) return;
    this.#shown.add(waiting.decisionId);
    if (hasDecisionEntry(this.#host.session(), waiting.decisionId)) return;
    this.#host.pi.sendMessage(
      {
        customType: MESSAGE_TYPE,
        content: decisionText(runId, waiting),
        display: true,
        details: {
          schema: MESSAGE_DETAILS_SCHEMA,
          kind: "decision",
          runId,
          decisionId: waiting.decisionId,
          step: waiting.nodeId,
          attempt: waiting.attemptId,
        },
      },
      // A person answers: no model turn starts.
      { triggerTurn: false },
    );
  }

  #announceEnd(run: RunSummary): void {
    const what = run.error ? `${run.state}: ${run.error.message}` : run.state;
    this.#host.ui()?.notify(
      `Workflow ${run.workflowName} ${what} (${run.runId})`,
      run.error ? "warning" : "info",
    );
  }

  clear(): void {
    this.#attempts = null;
    const ui = this.#host.ui();
    ui?.setWidget(WIDGET_KEY, undefined);
    ui?.setStatus(STATUS_KEY, undefined);
    this.#runId = null;
    this.#finishedAt = null;
  }
}

/**
 * The attempts after this sequence can have changed since `attempts` were read (sorted): the
 * open ones, and the interrupted ones, whose usage and submissions the worker that runs the step
 * again raises from the step's Pi session (state/transitions/recovered-usage.ts).
 */
function cursorOf(attempts: readonly AttemptSummary[]): number {
  const open = attempts.find((a) => CHANGING.has(a.state));
  return open ? open.sequence - 1 : (attempts.at(-1)?.sequence ?? 0);
}

const CHANGING: ReadonlySet<string> = new Set(["running", "waiting", "interrupted"]);
