/**
 * The host operations one Pi session uses, as typed calls over the session's client: claim and
 * present the current interactive request, submit/update it, report a settle without a
 * submission, long-poll for changes, and the run and answer operations. Every call carries the
 * session's stable client id (the client's) and its session id (the payload's).
 */
import type { HostClient } from "../client/host-client.ts";
import type { OperationReceipt } from "../protocol/host-operations.ts";
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { StepUsage } from "../protocol/step-usage.ts";

/** One pending request as the session presents it (`ClaimedInteractionSchema`). */
export type ClaimedInteraction = NonNullable<ClaimReceipt["interaction"]>;
export type ClaimReceipt = OperationReceipt<"interaction.claim">;
export type SubmitReceipt = OperationReceipt<"interaction.submit">;
/** The step's session entry, when a submit carries it to the host (not recorded yet). */
export interface SubmitPresentation {
  sessionEntryId: string;
  replaces: string | null;
}
export type RemindReceipt = OperationReceipt<"interaction.remind">;
export type WaitReceipt = OperationReceipt<"session.wait">;

/** Extra time the socket waits beyond a long poll's own `waitMs`. */
const LONG_POLL_MARGIN_MS = 5_000;

export class SessionOps {
  readonly client: HostClient;
  readonly sessionId: string;

  constructor(client: HostClient, sessionId: string) {
    this.client = client;
    this.sessionId = sessionId;
  }

  claim(): Promise<ClaimReceipt> {
    return this.client.call("interaction.claim", { payload: { sessionId: this.sessionId } });
  }

  present(
    interaction: Pick<ClaimedInteraction, "interactionId" | "runId">,
    sessionEntryId: string,
    replaces?: string | null,
  ): Promise<OperationReceipt<"interaction.present">> {
    return this.client.call("interaction.present", {
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
    presentation?: SubmitPresentation,
  ): Promise<SubmitReceipt> {
    return this.client.call("interaction.submit", {
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
        ...(presentation ? { presentation } : {}),
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
    return this.client.call("interaction.update", {
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
    return this.client.call("interaction.remind", {
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
    return this.client.call("session.wait", {
      timeoutMs: waitMs + LONG_POLL_MARGIN_MS,
      payload: {
        sessionId: this.sessionId,
        ...(cursor !== undefined ? { cursor } : {}),
        waitMs,
      },
    });
  }
}
