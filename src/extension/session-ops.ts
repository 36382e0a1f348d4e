/**
 * The host operations one Pi session uses, as typed calls over the session's client: claim and
 * present the current interactive request, submit/update it, report a settle without a
 * submission, long-poll for changes, and the run and answer operations. Every call carries the
 * session's stable client id (the client's) and its session id (the payload's).
 */
import type { HostClient } from "../client/host-client.ts";
import { HostCommandError } from "../client/command-receipt.ts";
import { type HostOperation, isHostOperation } from "../protocol/host-operations.ts";
import type { HostResponse } from "../protocol/host-response.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepContract } from "../protocol/step-contract-schema.ts";
import type { StepUsage } from "../protocol/step-usage.ts";

export interface ErrorInfo {
  code: string;
  message: string;
}

export interface ClaimedInteraction {
  interactionId: string;
  runId: string;
  expectedRevision: number;
  kind: "agent" | "assistantMessage";
  contract: StepContract;
  presentation: { sessionEntryId: string | null; claimedAt: number; presentedAt: number | null };
  reminders: number;
  submission: null | { submissionId: string; status: "validating" | "rejected"; error?: ErrorInfo };
  createdAt: number;
}

export interface ClaimReceipt {
  interaction: ClaimedInteraction | null;
  waiting: number;
  activeRun?: null | { runId: string; revision: number };
}

export interface SubmitReceipt {
  interactionId: string;
  submissionId?: string;
  status: "validating" | "accepted" | "rejected" | "updated";
  error?: ErrorInfo;
  message?: string;
  /** With `nextWaitMs`: the session's next step, claimed, when the run committed it in time. */
  next?: ClaimedInteraction | null;
}

export interface RemindReceipt {
  interactionId: string;
  action: "remind" | "failed" | "wait";
  reminder?: number;
  message?: string;
  error?: ErrorInfo;
}

export interface WaitReceipt {
  cursor: number;
  changed: boolean;
  activeRun?: null | { runId: string; revision: number };
}

/** Extra time the socket waits beyond a long poll's own `waitMs`. */
const LONG_POLL_MARGIN_MS = 5_000;

export class SessionOps {
  readonly client: HostClient;
  readonly sessionId: string;

  constructor(client: HostClient, sessionId: string) {
    this.client = client;
    this.sessionId = sessionId;
  }

  /** The raw answer of an operation that may not be in this build's protocol types yet. */
  async #call<T>(
    operation: string,
    options: {
      runId?: string;
      payload: Record<string, unknown>;
      idempotencyKey?: string;
      timeoutMs?: number;
      requestId?: string;
    },
  ): Promise<T> {
    // An operation this build's protocol does not know would fail the envelope check, and the
    // host closes a connection on that, failing every other request in flight on it.
    if (!isHostOperation(operation)) {
      throw new Error(`The workflow host does not offer ${operation} in this version`);
    }
    const response: HostResponse = await this.client.request(operation as HostOperation, {
      ...options,
      payload: options.payload as never,
    });
    if (response.outcome !== "accepted" && response.outcome !== "adopted") {
      throw new HostCommandError(response);
    }
    return response.receipt as T;
  }

  claim(): Promise<ClaimReceipt> {
    return this.#call("interaction.claim", { payload: { sessionId: this.sessionId } });
  }

  present(
    interaction: Pick<ClaimedInteraction, "interactionId" | "runId">,
    sessionEntryId: string,
    replaces?: string | null,
  ): Promise<{ sessionEntryId: string }> {
    return this.#call("interaction.present", {
      runId: interaction.runId,
      idempotencyKey: `present:${interaction.interactionId}:${sessionEntryId}`,
      payload: {
        interactionId: interaction.interactionId,
        sessionId: this.sessionId,
        sessionEntryId,
        ...(replaces !== undefined ? { replaces } : {}),
      },
    });
  }

  submit(
    interaction: Pick<ClaimedInteraction, "interactionId" | "runId">,
    call: { step: string; attempt: string; output: JsonValue },
    toolCallId: string,
    waitMs: number,
    nextWaitMs = 0,
    usage?: StepUsage,
  ): Promise<SubmitReceipt> {
    return this.#call("interaction.submit", {
      runId: interaction.runId,
      idempotencyKey: toolCallId,
      timeoutMs: waitMs + nextWaitMs + LONG_POLL_MARGIN_MS,
      payload: {
        interactionId: interaction.interactionId,
        nodeId: call.step,
        attemptId: call.attempt,
        sessionId: this.sessionId,
        submission: call.output,
        ...(usage ? { usage } : {}),
        waitMs,
        ...(nextWaitMs > 0 ? { nextWaitMs } : {}),
      },
    });
  }

  update(
    interaction: Pick<ClaimedInteraction, "interactionId" | "runId">,
    call: {
      step: string;
      attempt: string;
      update: { type: string; key?: string; data: JsonValue };
    },
    toolCallId: string,
    usage?: StepUsage,
  ): Promise<SubmitReceipt> {
    return this.#call("interaction.update", {
      runId: interaction.runId,
      idempotencyKey: toolCallId,
      payload: {
        interactionId: interaction.interactionId,
        nodeId: call.step,
        attemptId: call.attempt,
        sessionId: this.sessionId,
        update: call.update,
        ...(usage ? { usage } : {}),
      },
    });
  }

  remind(
    interaction: Pick<ClaimedInteraction, "interactionId" | "runId">,
    reminder: number,
    usage?: StepUsage,
  ): Promise<RemindReceipt> {
    return this.#call("interaction.remind", {
      runId: interaction.runId,
      idempotencyKey: `remind:${interaction.interactionId}:${reminder}`,
      payload: {
        interactionId: interaction.interactionId,
        sessionId: this.sessionId,
        reminder,
        ...(usage ? { usage } : {}),
      },
    });
  }

  wait(cursor: number | undefined, waitMs: number): Promise<WaitReceipt> {
    return this.#call("session.wait", {
      timeoutMs: waitMs + LONG_POLL_MARGIN_MS,
      payload: {
        sessionId: this.sessionId,
        ...(cursor !== undefined ? { cursor } : {}),
        waitMs,
      },
    });
  }
}
