/**
 * Payloads and receipts of the Pi outbox operations: notifications of notify nodes and the
 * turns a session owes the model (the completion presentation, successor turns). A claim hands
 * items to one request under a short lease; the items another live lease holds come back in
 * `leased`, never to be shown, only adopted when the caller's session branch already has an
 * entry naming them (a Pi process that died between showing and recording). Deliver/resolve
 * records the public session entry that shows an item.
 */
import * as v from "valibot";
import { looseObject, OpaqueIdSchema, strictObject, TimestampSchema } from "./fields.ts";
import { NOTIFICATION_KINDS } from "./worker-message-payloads.ts";

const NodeIdSchema = v.pipe(v.string(), v.minLength(1), v.maxLength(1000));

/** Longest text of a turn the host hands to a session (instructions plus the run's result). */
export const MAX_TURN_MESSAGE_CHARS = 50_000;

/** `notification.claim`: this session's undelivered notifications, oldest first. */
export const NotificationClaimPayloadSchema = strictObject({
  sessionId: OpaqueIdSchema,
  limit: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(100)), 20),
});

export const ClaimedNotificationSchema = looseObject({
  notificationId: OpaqueIdSchema,
  runId: OpaqueIdSchema,
  workflowName: v.string(),
  nodeId: NodeIdSchema,
  kind: v.picklist(NOTIFICATION_KINDS),
  message: v.string(),
  createdAt: TimestampSchema,
});
export type ClaimedNotification = v.InferOutput<typeof ClaimedNotificationSchema>;

export const NotificationClaimReceiptSchema = looseObject({
  notifications: v.array(ClaimedNotificationSchema),
  leased: v.array(looseObject({ notificationId: OpaqueIdSchema, runId: OpaqueIdSchema })),
});

/** `notification.deliver`: the session entry that now shows a notification. */
export const NotificationDeliverPayloadSchema = strictObject({
  notificationId: OpaqueIdSchema,
  sessionId: OpaqueIdSchema,
  sessionEntryId: OpaqueIdSchema,
});

export const NotificationDeliverReceiptSchema = looseObject({
  notificationId: OpaqueIdSchema,
  sessionEntryId: OpaqueIdSchema,
  deliveredAt: TimestampSchema,
});

/**
 * `turn.claim`: the session's next owed turn. `userTurnAt` is the time of the latest user
 * message on the caller's branch: a completion presentation that became due before it is stale
 * (the user moved on) and is superseded instead of started.
 */
export const TurnClaimPayloadSchema = strictObject({
  sessionId: OpaqueIdSchema,
  userTurnAt: v.optional(TimestampSchema),
});

export const TURN_CAUSES = ["presentation", "timedOut", "failed", "launchFailed"] as const;

export const ClaimedTurnSchema = looseObject({
  turnIntentId: OpaqueIdSchema,
  runId: OpaqueIdSchema,
  workflowName: v.string(),
  cause: v.picklist(TURN_CAUSES),
  /** `presentation`: hidden instructions plus the result; `fallback`: a short factual message. */
  kind: v.picklist(["presentation", "fallback"]),
  /** The message that starts the turn, built by the host (at most 50,000 characters). */
  message: v.pipe(v.string(), v.maxLength(MAX_TURN_MESSAGE_CHARS)),
  /** Whether the message is shown to the person (a fallback) or only given to the model. */
  display: v.boolean(),
});
export type ClaimedTurn = v.InferOutput<typeof ClaimedTurnSchema>;

export const TurnClaimReceiptSchema = looseObject({
  turn: v.nullable(ClaimedTurnSchema),
  leased: v.array(looseObject({ turnIntentId: OpaqueIdSchema, runId: OpaqueIdSchema })),
});

/** `turn.resolve`: the session entry of the turn the session started for an intent. */
export const TurnResolvePayloadSchema = strictObject({
  turnIntentId: OpaqueIdSchema,
  sessionId: OpaqueIdSchema,
  sessionEntryId: OpaqueIdSchema,
});

export const TurnResolveReceiptSchema = looseObject({
  turnIntentId: OpaqueIdSchema,
  resolution: v.picklist(["presentation", "fallback"]),
  sessionEntryId: OpaqueIdSchema,
});

/**
 * A run's notification as `run.status` shows it (also for a headless run, whose notifications
 * have no session to go to): what it said and whether a Pi session showed it.
 */
export const RunNotificationSchema = looseObject({
  notificationId: OpaqueIdSchema,
  nodeId: NodeIdSchema,
  kind: v.picklist(NOTIFICATION_KINDS),
  message: v.string(),
  state: v.picklist(["pending", "claimed", "delivered"]),
  createdAt: TimestampSchema,
  deliveredAt: v.optional(TimestampSchema),
});
export type RunNotification = v.InferOutput<typeof RunNotificationSchema>;
