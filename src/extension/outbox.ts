/**
 * Delivers this session's outbox: the notifications of its runs' notify nodes and the turns the
 * host owes it (a completion presentation, or a successor turn when a workflow ended or
 * stranded the model's turn).
 *
 * - Between turns, a notification is claimed (`notification.claim`, a short lease: another Pi
 *   process on this session sees it `leased` and leaves it alone), shown with `pi.sendMessage`
 *   (displayed, no turn) and recorded with `notification.deliver` and the entry id Pi gave it.
 * - A turn is claimed only while Pi is idle with nothing queued and no workflow step on screen
 *   (`turn.claim`); its host-written message starts exactly one normal turn (`triggerTurn`), and
 *   the entry id is recorded with `turn.resolve` once Pi appended it.
 * - Adoption: an item already on this branch (Pi died after showing it and before recording it,
 *   so the host still has it claimed or leased) is recorded with that entry, never shown again.
 *   An item this process sent whose entry has not appeared yet is waited for, never resent.
 *
 * Everything is serialized (the tick, the host's push and settles overlap); failures are quiet,
 * the next sync tries again.
 */
import type { HostClient } from "../client/host-client.ts";
import { HostCommandError } from "../client/command-receipt.ts";
import { crashPoint } from "../base/crash-point.ts";
import type { ClaimedNotification, ClaimedTurn } from "../protocol/outbox-operations.ts";
import type { PiExtensionApi, PiSessionManager } from "./pi-api.ts";
import {
  findOutboxEntry,
  lastUserTurnAt,
  notificationText,
  OUTBOX_DETAILS_SCHEMA,
  OUTBOX_MESSAGE_TYPE,
  type OutboxDetails,
} from "./outbox-messages.ts";

export interface OutboxHost {
  pi: PiExtensionApi;
  client: HostClient;
  sessionId: string;
  session(): PiSessionManager;
  /** Pi is not running a turn (a message sent now is appended at once). */
  isIdle(): boolean;
  /** Pi is idle, nothing is queued and no workflow step is on screen: a turn may start now. */
  canStartTurn(): boolean;
}

type Item = { notificationId: string } | { turnIntentId: string };

export class Outbox {
  readonly #host: OutboxHost;
  #chain: Promise<void> = Promise.resolve();
  /** Items this process sent whose entry is not recorded with the host yet, by id. */
  readonly #unrecorded = new Map<string, Item>();

  constructor(host: OutboxHost) {
    this.#host = host;
  }

  /** This process sent an item whose entry the host has not recorded yet. */
  get hasUnrecorded(): boolean {
    return this.#unrecorded.size > 0;
  }

  /** Claims, shows and records what the session is owed; serialized. */
  sync(): Promise<void> {
    const next = this.#chain.then(() => this.#sync());
    this.#chain = next.catch(() => {});
    return next;
  }

  async #sync(): Promise<void> {
    await this.#recordSent();
    await this.#notifications();
    await this.#turn();
  }

  async #recordSent(): Promise<void> {
    for (const item of [...this.#unrecorded.values()]) {
      const entry = findOutboxEntry(this.#host.session(), item);
      if (entry) await this.#record(item, entry.id);
    }
  }

  async #notifications(): Promise<void> {
    // Shown between turns: a message sent while Pi streams would wait for the run's end anyway.
    if (!this.#host.isIdle()) return;
    const claim = await this.#host.client.call("notification.claim", {
      payload: { sessionId: this.#host.sessionId },
    });
    for (const leased of claim.leased) await this.#adopt({ notificationId: leased.notificationId });
    for (const notification of claim.notifications) {
      const item = { notificationId: notification.notificationId };
      if (await this.#adopt(item) || this.#unrecorded.has(item.notificationId)) continue;
      this.#showNotification(notification);
      crashPoint("extension.notification.afterShow");
      // Pi appends it at once when idle; otherwise it is recorded when it appears.
      const entry = findOutboxEntry(this.#host.session(), item);
      if (entry) await this.#record(item, entry.id);
      else this.#unrecorded.set(item.notificationId, item);
    }
  }

  async #turn(): Promise<void> {
    if (!this.#host.canStartTurn()) return;
    if ([...this.#unrecorded.values()].some((item) => "turnIntentId" in item)) return;
    const claim = await this.#host.client.call("turn.claim", {
      payload: {
        sessionId: this.#host.sessionId,
        ...optional("userTurnAt", lastUserTurnAt(this.#host.session())),
      },
    });
    for (const leased of claim.leased) await this.#adopt({ turnIntentId: leased.turnIntentId });
    const turn = claim.turn;
    if (!turn) return;
    const item = { turnIntentId: turn.turnIntentId };
    if (await this.#adopt(item)) return;
    // The claim took a moment: start the turn only if Pi is still free.
    if (!this.#host.canStartTurn()) return;
    this.#startTurn(turn);
    this.#unrecorded.set(turn.turnIntentId, item);
    crashPoint("extension.turn.afterSend");
  }

  /** Records an item already on the branch; false when it is not there. */
  async #adopt(item: Item): Promise<boolean> {
    const entry = findOutboxEntry(this.#host.session(), item);
    if (!entry) return false;
    await this.#record(item, entry.id);
    return true;
  }

  async #record(item: Item, sessionEntryId: string): Promise<void> {
    const id = "notificationId" in item ? item.notificationId : item.turnIntentId;
    try {
      if ("notificationId" in item) {
        await this.#host.client.call("notification.deliver", {
          payload: { notificationId: id, sessionId: this.#host.sessionId, sessionEntryId },
        });
      } else {
        await this.#host.client.call("turn.resolve", {
          payload: { turnIntentId: id, sessionId: this.#host.sessionId, sessionEntryId },
        });
      }
    } catch (error) {
      // Recorded otherwise already (another entry, superseded) or gone: nothing left to do.
      if (!(error instanceof HostCommandError) || error.outcome === "unavailable") throw error;
    }
    this.#unrecorded.delete(id);
  }

  #showNotification(n: ClaimedNotification): void {
    const details: OutboxDetails = {
      schema: OUTBOX_DETAILS_SCHEMA,
      kind: "notification",
      runId: n.runId,
      notificationId: n.notificationId,
      notificationKind: n.kind,
    };
    this.#host.pi.sendMessage(
      { customType: OUTBOX_MESSAGE_TYPE, content: notificationText(n), display: true, details },
      { triggerTurn: false },
    );
  }

  #startTurn(turn: ClaimedTurn): void {
    const details: OutboxDetails = {
      schema: OUTBOX_DETAILS_SCHEMA,
      kind: "turn",
      runId: turn.runId,
      turnIntentId: turn.turnIntentId,
      turnKind: turn.kind,
    };
    this.#host.pi.sendMessage(
      { customType: OUTBOX_MESSAGE_TYPE, content: turn.message, display: turn.display, details },
      { triggerTurn: true },
    );
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
