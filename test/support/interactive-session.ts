/**
 * A socket client standing in for the Pi extension of one session (the real Pi is covered by
 * the extension's e2e tests): it starts interactive runs bound to its session, waits for the
 * session's current step with `session.wait` long polls, presents it, submits outputs with
 * tool-call ids, and reports turns that ended without a submission. It speaks only the public
 * socket operations through `src/client`.
 */
import { connectHost, type HostConnection } from "../../src/client/mod.ts";
import type { HostResponse } from "../../src/protocol/host-response.ts";
import type { StepContract } from "../../src/protocol/step-contract-schema.ts";

export interface PendingStep {
  interactionId: string;
  runId: string;
  expectedRevision: number;
  kind: string;
  contract: StepContract;
  presentation: { sessionEntryId: string | null; claimedAt: number; presentedAt: number | null };
  reminders: number;
  submission:
    | { submissionId: string; status: string; error?: { code: string; message: string } }
    | null;
  createdAt: number;
}

/** The session's reserved run as claim and wait receipts name it. */
export interface ActiveRun {
  runId: string;
  revision: number;
}

let calls = 0;

export class SessionClient {
  readonly sessionId: string;
  readonly connection: HostConnection;
  #cursor: number | undefined;

  private constructor(sessionId: string, connection: HostConnection) {
    this.sessionId = sessionId;
    this.connection = connection;
  }

  static async open(socketPath: string, sessionId: string): Promise<SessionClient> {
    const connection = await connectHost(socketPath, {
      clientId: `pi-${sessionId}`,
      requestTimeoutMs: 40_000,
    });
    return new SessionClient(sessionId, connection);
  }

  request(operation: string, fields: Record<string, unknown> = {}): Promise<HostResponse> {
    return this.connection.request(operation as never, fields as never);
  }

  async start(workflow: string, cwd: string, input: unknown = {}): Promise<HostResponse> {
    return await this.request("run.start", {
      payload: {
        workflow,
        cwd,
        input,
        executionMode: "interactive",
        originSessionId: this.sessionId,
      },
    });
  }

  async claim(): Promise<
    { interaction: PendingStep | null; waiting: number; activeRun?: ActiveRun | null }
  > {
    const answer = await this.request("interaction.claim", {
      payload: { sessionId: this.sessionId },
    });
    if (answer.outcome !== "accepted") throw new Error(`claim: ${JSON.stringify(answer)}`);
    return answer.receipt as never;
  }

  /**
   * The session's current step once it satisfies `accept` (default: any), using long polls
   * (`session.wait`) between claims. Rejects at the deadline.
   */
  async nextStep(
    accept: (step: PendingStep) => boolean = () => true,
    timeoutMs = 30_000,
  ): Promise<PendingStep> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { interaction } = await this.claim();
      if (interaction && accept(interaction)) return interaction;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`No matching step for session ${this.sessionId}`);
      await this.wait(Math.min(left, 5_000));
    }
  }

  /** One `session.wait` from the last cursor. */
  async wait(
    waitMs: number,
  ): Promise<{ cursor: number; changed: boolean; activeRun?: ActiveRun | null }> {
    const answer = await this.request("session.wait", {
      payload: { sessionId: this.sessionId, cursor: this.#cursor, waitMs },
    });
    if (answer.outcome !== "accepted") throw new Error(`wait: ${JSON.stringify(answer)}`);
    const receipt = answer.receipt as {
      cursor: number;
      changed: boolean;
      activeRun?: ActiveRun | null;
    };
    this.#cursor = receipt.cursor;
    return receipt;
  }

  present(step: PendingStep, sessionEntryId: string, replaces?: string | null) {
    return this.request("interaction.present", {
      runId: step.runId,
      payload: {
        interactionId: step.interactionId,
        sessionId: this.sessionId,
        sessionEntryId,
        ...(replaces !== undefined ? { replaces } : {}),
      },
    });
  }

  submit(
    step: PendingStep,
    output: unknown,
    options: {
      toolCallId?: string;
      nodeId?: string;
      attemptId?: string;
      waitMs?: number;
      nextWaitMs?: number;
      /** The step's session entry, recorded with the submission (as the extension sends it). */
      presentation?: { sessionEntryId: string; replaces?: string | null };
    } = {},
  ) {
    return this.request("interaction.submit", {
      runId: step.runId,
      idempotencyKey: options.toolCallId ?? `call-${process.pid}-${++calls}`,
      payload: {
        interactionId: step.interactionId,
        nodeId: options.nodeId ?? step.contract.step,
        attemptId: options.attemptId ?? step.contract.attempt,
        sessionId: this.sessionId,
        submission: output,
        ...(options.waitMs !== undefined ? { waitMs: options.waitMs } : {}),
        ...(options.nextWaitMs !== undefined ? { nextWaitMs: options.nextWaitMs } : {}),
        ...(options.presentation ? { presentation: options.presentation } : {}),
      },
    });
  }

  update(step: PendingStep, update: unknown, toolCallId = `upd-${process.pid}-${++calls}`) {
    return this.request("interaction.update", {
      runId: step.runId,
      idempotencyKey: toolCallId,
      payload: {
        interactionId: step.interactionId,
        nodeId: step.contract.step,
        attemptId: step.contract.attempt,
        sessionId: this.sessionId,
        update,
      },
    });
  }

  remind(step: PendingStep, reminder: number) {
    return this.request("interaction.remind", {
      runId: step.runId,
      idempotencyKey: `remind:${step.interactionId}:${reminder}`,
      payload: { interactionId: step.interactionId, sessionId: this.sessionId, reminder },
    });
  }

  close(): void {
    this.connection.close();
  }
}
