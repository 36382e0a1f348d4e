/**
 * One Pi session's link to the host, from `session_start` to `session_shutdown`: the host client
 * under the session's stable client id, the presenter of interactive steps, the watch of the
 * session's run, the tool's deferred launches, and the loops that keep them current (a long poll
 * the host answers on any change, so a step appears within milliseconds, plus a once-a-second
 * tick as the spec's backstop). Closing is idempotent. Nothing here loads workflow code.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { stableClientId } from "../client/client-id.ts";
import { createHostClient, type HostClient } from "../client/host-client.ts";
import { runEnvironment } from "../protocol/run-environment.ts";
import { clientStateDir } from "../client/socket-path.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { RunSummary } from "../protocol/run-operations.ts";
import type { StepUsage } from "../protocol/step-usage.ts";
import { BranchIndex } from "./branch-index.ts";
import { stepUsageOnBranch } from "./branch-usage.ts";
import { HandoffQuiet } from "./handoff-quiet.ts";
import { hostStartCommand } from "./host-launch.ts";
import type { PiContext, PiExtensionApi } from "./pi-api.ts";
import { Presenter } from "./presenter.ts";
import { RunWatch } from "./run-watch.ts";
import { Outbox } from "./outbox.ts";
import { SessionOps } from "./session-ops.ts";
import { latestBranchRunId, MESSAGE_DETAILS_SCHEMA, MESSAGE_TYPE } from "./session-messages.ts";
import { errorLine } from "./error-line.ts";

const TICK_MS = 1_000;
const LONG_POLL_MS = 25_000;
const RETRY_MS = 1_000;

export interface DeferredLaunch {
  key: string;
  workflow: string;
  input: JsonValue;
}

export class WorkflowSession {
  readonly sessionId: string;
  readonly client: HostClient;
  readonly ops: SessionOps;
  readonly presenter: Presenter;
  readonly runs: RunWatch;
  readonly outbox: Outbox;
  /** The quiet of a step handoff: pushes meanwhile wait (handoff-quiet.ts). */
  readonly handoff = new HandoffQuiet();
  /** This extension's messages on the session's branch, read incrementally. */
  readonly branch = new BranchIndex(() => this.#ctx.sessionManager);
  #ctx: PiContext;
  #closed = false;
  #linked = false;
  #tick: ReturnType<typeof setInterval> | null = null;
  #cursor: number | undefined;
  #launches: DeferredLaunch[] = [];

  readonly #pi: PiExtensionApi;

  constructor(pi: PiExtensionApi, ctx: PiContext) {
    this.#pi = pi;
    this.#ctx = ctx;
    this.sessionId = ctx.sessionManager.getSessionId();
    this.client = createHostClient({
      // BOARD decision 2: one id per Pi session, the same after a reconnect or a Pi restart.
      clientId: stableClientId(`pi-session:${this.sessionId}`),
      // Asked at each start: with no usable Node the start fails with one line (host-launch.ts).
      startCommand: () => hostStartCommand(),
    });
    this.ops = new SessionOps(this.client, this.sessionId);
    this.presenter = new Presenter({
      pi,
      ops: this.ops,
      session: () => this.#ctx.sessionManager,
      branch: this.branch,
      isIdle: () => this.#ctx.isIdle(),
      hasPendingMessages: () => this.#ctx.hasPendingMessages(),
      abort: () => this.#ctx.abort(),
      notify: (message, level) => this.ui()?.notify(message, level),
    });
    this.outbox = new Outbox({
      pi,
      client: this.client,
      sessionId: this.sessionId,
      session: () => this.#ctx.sessionManager,
      isIdle: () => this.#ctx.isIdle(),
      canStartTurn: () =>
        this.presenter.current === null && this.#ctx.isIdle() && !this.#ctx.hasPendingMessages(),
    });
    this.runs = new RunWatch({
      pi,
      client: this.client,
      ui: () => this.ui(),
      session: () => this.#ctx.sessionManager,
      detailFor: (nodeId) => {
        const current = this.presenter.current;
        return current?.contract.step === nodeId ? current.contract.statusDetail : null;
      },
    });
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** What the step of `interactionId` has used in this session so far (branch-usage.ts). */
  stepUsage(interactionId: string): StepUsage | undefined {
    return stepUsageOnBranch(this.branch, interactionId);
  }

  /** Keeps the latest context (event handlers get a fresh one). */
  touch(ctx: PiContext): void {
    this.#ctx = ctx;
  }

  ui() {
    return this.#closed || !this.#ctx.hasUI ? null : this.#ctx.ui;
  }

  get cwd(): string {
    return this.#ctx.cwd;
  }

  /**
   * At session start: link to the host only when this installation has workflow state (a run
   * may be waiting for this session); otherwise the first workflow command links.
   */
  start(): void {
    if (!existsSync(join(clientStateDir(), "state.sqlite"))) return;
    const branchRun = latestBranchRunId(this.#ctx.sessionManager);
    if (branchRun) this.runs.adopt(branchRun);
    this.link();
  }

  /** Starts the loops (once); the client connects, starting the host if needed. */
  link(): void {
    if (this.#linked || this.#closed) return;
    this.#linked = true;
    this.#tick = setInterval(() => void this.sync(), TICK_MS);
    this.#tick.unref?.();
    void this.#longPoll();
    void this.sync();
  }

  /** True once this session talks to the host (state existed at start, or a command linked). */
  get linked(): boolean {
    return this.#linked;
  }

  /**
   * Presents the current step and redraws the run's progress (`cursor`: the session's cursor
   * the host's push reported). Quiet on failure (loops retry). An unlinked session has nothing
   * to show and asks nothing: a plain Pi turn must not start a host or create workflow state for
   * a user who never ran a workflow.
   */
  async sync(cursor?: number): Promise<void> {
    if (this.#closed || !this.#linked) return;
    // Each part on its own: the host may be starting or restarting, and the next tick or wake
    // tries again; a failed claim must not stop the progress display, nor the other way round.
    await this.presenter.wake(cursor).catch(() => {});
    await this.outbox.sync().catch(() => {});
    const active = this.presenter.lastClaim?.activeRun?.runId ?? this.presenter.current?.runId;
    if (active) this.runs.follow(active);
    await this.runs.refresh().catch(() => {});
  }

  async #longPoll(): Promise<void> {
    while (!this.#closed) {
      try {
        const answer = await this.ops.wait(
          this.#cursor,
          this.#cursor === undefined ? 0 : LONG_POLL_MS,
        );
        if (this.#closed) return;
        // A push during a step handoff waits until the next step's request went out.
        await this.handoff.ended();
        if (this.#closed) return;
        const first = this.#cursor === undefined;
        this.#cursor = answer.cursor;
        if (answer.activeRun?.runId) this.runs.follow(answer.activeRun.runId);
        if (answer.changed || first) await this.sync(answer.cursor);
      } catch {
        if (this.#closed) return;
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref?.());
      }
    }
  }

  /** Queues a tool `start` to run after the current turn settles. */
  defer(launch: DeferredLaunch): void {
    this.#launches.push(launch);
  }

  get queuedLaunches(): readonly DeferredLaunch[] {
    return this.#launches;
  }

  /** Starts an interactive run bound to this session. */
  async startRun(
    workflow: string,
    input: JsonValue,
    requestId?: string,
  ): Promise<RunSummary> {
    this.link();
    const receipt = await this.client.call("run.start", {
      requestId,
      payload: {
        workflow,
        input,
        cwd: this.cwd,
        executionMode: "interactive",
        originSessionId: this.sessionId,
        // The run gets the Pi process's environment (the allowlisted base), as a CLI start would.
        env: runEnvironment(process.env, {}),
      },
    });
    this.runs.follow(receipt.run.runId);
    void this.sync();
    return receipt.run;
  }

  /** After a turn settled: start the queued launches, then remind or present. */
  async settled(aborted: boolean): Promise<void> {
    const launches = this.#launches.splice(0);
    for (const launch of launches) {
      try {
        const run = await this.startRun(launch.workflow, launch.input, launch.key);
        this.ui()?.notify(`Started workflow ${run.workflowName} (${run.runId})`, "info");
      } catch (error) {
        this.#pi.sendMessage(
          {
            customType: MESSAGE_TYPE,
            content: `The workflow start you queued did not start: ${
              errorLine(error)
            }. Fix the cause and call the workflow tool's start again, or tell the user.`,
            display: true,
            details: { schema: MESSAGE_DETAILS_SCHEMA, kind: "launchFailed", runId: "" },
          },
          { triggerTurn: true, deliverAs: "followUp" },
        );
      }
    }
    try {
      await this.presenter.settled(aborted);
    } catch {
      // Reported again on the next settle; the tick keeps presenting.
    }
    void this.sync();
  }

  /** The outbox's deliveries after a turn, for a linked session only (see `sync`). */
  syncOutbox(): Promise<void> {
    if (this.#closed || !this.#linked) return Promise.resolve();
    return this.outbox.sync();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.handoff.close();
    if (this.#tick) clearInterval(this.#tick);
    this.#tick = null;
    this.client.close();
  }
}
