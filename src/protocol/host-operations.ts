/**
 * The operations of the host socket (the spec's 21, plus `effect.resolve`, `run.find`, `run.logs`, `run.rerun`, the
 * interactive-step ones and `controller.bind`/`controller.unbind`): for each, whether the
 * envelope must name a run, whether it changes state (and so stores a receipt), its payload
 * schema and its receipt schema. The host serves `SERVED_OPERATIONS` now
 * and answers the rest `rejected` ("not available yet").
 */
import * as v from "valibot";
import { CountSchema, looseObject, PositiveIntegerSchema, strictObject } from "./fields.ts";
import {
  RunBudgetPayloadSchema,
  RunCancelPayloadSchema,
  RunCommandReceiptSchema,
  RunListPayloadSchema,
  RunListReceiptSchema,
  RunPausePayloadSchema,
  RunResumePayloadSchema,
  RunStartPayloadSchema,
  RunStatusPayloadSchema,
  RunStatusReceiptSchema,
} from "./run-operations.ts";
import {
  AnswerReceiptSchema,
  CheckpointAnswerPayloadSchema,
  DecisionAnswerPayloadSchema,
} from "./session-operations.ts";
import {
  NotificationClaimPayloadSchema,
  NotificationClaimReceiptSchema,
  NotificationDeliverPayloadSchema,
  NotificationDeliverReceiptSchema,
  TurnClaimPayloadSchema,
  TurnClaimReceiptSchema,
  TurnResolvePayloadSchema,
  TurnResolveReceiptSchema,
} from "./outbox-operations.ts";
import {
  InteractionClaimPayloadSchema,
  InteractionClaimReceiptSchema,
  InteractionPresentPayloadSchema,
  InteractionPresentReceiptSchema,
  InteractionReceiptSchema,
  InteractionRemindPayloadSchema,
  InteractionRemindReceiptSchema,
  InteractionSubmitPayloadSchema,
  InteractionUpdatePayloadSchema,
  SessionWaitPayloadSchema,
  SessionWaitReceiptSchema,
} from "./interaction-operations.ts";
import {
  ControllerApplyPayloadSchema,
  ControllerApplyReceiptSchema,
  ControllerBindPayloadSchema,
  ControllerBindReceiptSchema,
  ControllerDeletePayloadSchema,
  ControllerDeleteReceiptSchema,
  ControllerGetPayloadSchema,
  ControllerGetReceiptSchema,
  ControllerListPayloadSchema,
  ControllerListReceiptSchema,
  ControllerReceiptSchema,
  ControllerReconcilePayloadSchema,
  ControllerUnbindPayloadSchema,
  ControllerUnbindReceiptSchema,
} from "./controller-operations.ts";
import { EffectResolvePayloadSchema, EffectResolveReceiptSchema } from "./effect-operations.ts";
import { RunFindPayloadSchema, RunFindReceiptSchema } from "./run-find.ts";
import { RunLogsPayloadSchema, RunLogsReceiptSchema } from "./log-operations.ts";
import {
  ScheduleAddPayloadSchema,
  ScheduleApplyPayloadSchema,
  ScheduleListPayloadSchema,
  ScheduleListReceiptSchema,
  ScheduleReceiptSchema,
  ScheduleRefPayloadSchema,
  ScheduleRemoveReceiptSchema,
  ScheduleResumePayloadSchema,
  ScheduleShowPayloadSchema,
  ScheduleShowReceiptSchema,
} from "./schedule-operations.ts";
import { RunRerunPayloadSchema, RunRerunReceiptSchema } from "./rerun-operations.ts";
import { HostPrunePayloadSchema, HostPruneReceiptSchema } from "./retention-operations.ts";

export const HostStatusPayloadSchema = v.optional(strictObject({}), {});
export const HostStopPayloadSchema = v.optional(strictObject({}), {});

/** Exactly the spec's status list; nothing that identifies a person, session, path or payload. */
export const HostStatusReceiptSchema = looseObject({
  state: v.picklist(["running", "stopping"]),
  epoch: PositiveIntegerSchema,
  socket: v.picklist(["available", "unavailable"]),
  activeWorkers: CountSchema,
  runs: looseObject({
    queued: CountSchema,
    running: CountSchema,
    parked: CountSchema,
    waiting: CountSchema,
  }),
  expiredClaims: CountSchema,
  pendingInteractions: CountSchema,
  ambiguousEffects: CountSchema,
  /** Schedules (docs/schedules.md): enabled ones keep the host alive; the next slot of any. */
  schedules: v.optional(looseObject({
    enabled: CountSchema,
    paused: CountSchema,
    nextFireAt: v.nullable(CountSchema),
  })),
  /** Package version of the running host, so a client can spot a stale host after an upgrade. */
  version: v.optional(v.string()),
});
export type HostStatusReceipt = v.InferOutput<typeof HostStatusReceiptSchema>;

export const HostStopReceiptSchema = looseObject({ stopping: v.boolean() });

export interface OperationSpec {
  /** `required`: the envelope must carry `runId`; `forbidden`: it must not. */
  runId: "required" | "forbidden";
  /** Changes durable state, so the host stores a `host_commands` receipt before answering. */
  mutating: boolean;
  payload: v.GenericSchema<unknown, unknown>;
  receipt: v.GenericSchema<unknown, unknown>;
}

export const OPERATION_SPECS = {
  "run.start": {
    runId: "forbidden",
    mutating: true,
    payload: RunStartPayloadSchema,
    receipt: RunCommandReceiptSchema,
  },
  "run.pause": {
    runId: "required",
    mutating: true,
    payload: RunPausePayloadSchema,
    receipt: RunCommandReceiptSchema,
  },
  "run.resume": {
    runId: "required",
    mutating: true,
    payload: RunResumePayloadSchema,
    receipt: RunCommandReceiptSchema,
  },
  "run.cancel": {
    runId: "required",
    mutating: true,
    payload: RunCancelPayloadSchema,
    receipt: RunCommandReceiptSchema,
  },
  "run.rerun": {
    runId: "required",
    mutating: true,
    payload: RunRerunPayloadSchema,
    receipt: RunRerunReceiptSchema,
  },
  "run.budget": {
    runId: "required",
    mutating: true,
    payload: RunBudgetPayloadSchema,
    receipt: RunCommandReceiptSchema,
  },
  "run.status": {
    runId: "required",
    mutating: false,
    payload: RunStatusPayloadSchema,
    receipt: RunStatusReceiptSchema,
  },
  "run.list": {
    runId: "forbidden",
    mutating: false,
    payload: RunListPayloadSchema,
    receipt: RunListReceiptSchema,
  },
  "run.find": {
    runId: "forbidden",
    mutating: false,
    payload: RunFindPayloadSchema,
    receipt: RunFindReceiptSchema,
  },
  "run.logs": {
    runId: "required",
    mutating: false,
    payload: RunLogsPayloadSchema,
    receipt: RunLogsReceiptSchema,
  },
  "checkpoint.answer": {
    runId: "required",
    mutating: true,
    payload: CheckpointAnswerPayloadSchema,
    receipt: AnswerReceiptSchema,
  },
  "decision.answer": {
    runId: "required",
    mutating: true,
    payload: DecisionAnswerPayloadSchema,
    receipt: AnswerReceiptSchema,
  },
  "interaction.submit": {
    runId: "required",
    mutating: true,
    payload: InteractionSubmitPayloadSchema,
    receipt: InteractionReceiptSchema,
  },
  "interaction.update": {
    runId: "required",
    mutating: true,
    payload: InteractionUpdatePayloadSchema,
    receipt: InteractionReceiptSchema,
  },
  "interaction.claim": {
    runId: "forbidden",
    // Its only write is the idempotent first claim time: no receipt row per poll.
    mutating: false,
    payload: InteractionClaimPayloadSchema,
    receipt: InteractionClaimReceiptSchema,
  },
  "interaction.present": {
    runId: "required",
    mutating: true,
    payload: InteractionPresentPayloadSchema,
    receipt: InteractionPresentReceiptSchema,
  },
  "interaction.remind": {
    runId: "required",
    mutating: true,
    payload: InteractionRemindPayloadSchema,
    receipt: InteractionRemindReceiptSchema,
  },
  "session.wait": {
    runId: "forbidden",
    mutating: false,
    payload: SessionWaitPayloadSchema,
    receipt: SessionWaitReceiptSchema,
  },
  "notification.claim": {
    runId: "forbidden",
    // Its only write is a short lease held by the request: no receipt row per poll.
    mutating: false,
    payload: NotificationClaimPayloadSchema,
    receipt: NotificationClaimReceiptSchema,
  },
  "notification.deliver": {
    runId: "forbidden",
    mutating: true,
    payload: NotificationDeliverPayloadSchema,
    receipt: NotificationDeliverReceiptSchema,
  },
  "turn.claim": {
    runId: "forbidden",
    mutating: false,
    payload: TurnClaimPayloadSchema,
    receipt: TurnClaimReceiptSchema,
  },
  "turn.resolve": {
    runId: "forbidden",
    mutating: true,
    payload: TurnResolvePayloadSchema,
    receipt: TurnResolveReceiptSchema,
  },
  "controller.list": {
    runId: "forbidden",
    mutating: false,
    payload: ControllerListPayloadSchema,
    receipt: ControllerListReceiptSchema,
  },
  "controller.get": {
    runId: "forbidden",
    mutating: false,
    payload: ControllerGetPayloadSchema,
    receipt: ControllerGetReceiptSchema,
  },
  "controller.apply": {
    runId: "forbidden",
    mutating: true,
    payload: ControllerApplyPayloadSchema,
    receipt: ControllerApplyReceiptSchema,
  },
  "controller.reconcile": {
    runId: "forbidden",
    mutating: true,
    payload: ControllerReconcilePayloadSchema,
    receipt: ControllerReceiptSchema,
  },
  "controller.delete": {
    runId: "forbidden",
    mutating: true,
    payload: ControllerDeletePayloadSchema,
    receipt: ControllerDeleteReceiptSchema,
  },
  "controller.bind": {
    runId: "forbidden",
    mutating: true,
    payload: ControllerBindPayloadSchema,
    receipt: ControllerBindReceiptSchema,
  },
  "controller.unbind": {
    runId: "forbidden",
    mutating: true,
    payload: ControllerUnbindPayloadSchema,
    receipt: ControllerUnbindReceiptSchema,
  },
  "schedule.add": {
    runId: "forbidden",
    mutating: true,
    payload: ScheduleAddPayloadSchema,
    receipt: ScheduleReceiptSchema,
  },
  "schedule.apply": {
    runId: "forbidden",
    mutating: true,
    payload: ScheduleApplyPayloadSchema,
    receipt: ScheduleReceiptSchema,
  },
  "schedule.list": {
    runId: "forbidden",
    mutating: false,
    payload: ScheduleListPayloadSchema,
    receipt: ScheduleListReceiptSchema,
  },
  "schedule.show": {
    runId: "forbidden",
    mutating: false,
    payload: ScheduleShowPayloadSchema,
    receipt: ScheduleShowReceiptSchema,
  },
  "schedule.pause": {
    runId: "forbidden",
    mutating: true,
    payload: ScheduleRefPayloadSchema,
    receipt: ScheduleReceiptSchema,
  },
  "schedule.resume": {
    runId: "forbidden",
    mutating: true,
    payload: ScheduleResumePayloadSchema,
    receipt: ScheduleReceiptSchema,
  },
  "schedule.remove": {
    runId: "forbidden",
    mutating: true,
    payload: ScheduleRefPayloadSchema,
    receipt: ScheduleRemoveReceiptSchema,
  },
  "host.status": {
    runId: "forbidden",
    mutating: false,
    payload: HostStatusPayloadSchema,
    receipt: HostStatusReceiptSchema,
  },
  "host.stop": {
    runId: "forbidden",
    // Asks the process to stop; it changes no durable state, so it has no receipt (a retry after
    // the host stopped finds no host, which is the answer) and clients never retry it.
    mutating: false,
    payload: HostStopPayloadSchema,
    receipt: HostStopReceiptSchema,
  },
  "host.prune": {
    runId: "forbidden",
    mutating: true,
    payload: HostPrunePayloadSchema,
    receipt: HostPruneReceiptSchema,
  },
  "effect.resolve": {
    runId: "required",
    mutating: true,
    payload: EffectResolvePayloadSchema,
    receipt: EffectResolveReceiptSchema,
  },
} as const satisfies Record<string, OperationSpec>;

export type HostOperation = keyof typeof OPERATION_SPECS;
/** Every operation, in the order of the table (the JSON Schema's enum keeps it). */
export const HOST_OPERATIONS = Object.keys(OPERATION_SPECS) as readonly HostOperation[];

/**
 * Operations the host answers today: all of them. An operation listed before the host serves it
 * is left out here and answered `rejected` ("not available yet").
 */
export const SERVED_OPERATIONS: ReadonlySet<HostOperation> = new Set<HostOperation>(
  HOST_OPERATIONS,
);

export function isHostOperation(value: unknown): value is HostOperation {
  return typeof value === "string" && (HOST_OPERATIONS as readonly string[]).includes(value);
}

type Specs = typeof OPERATION_SPECS;
/** The validated payload of an operation (defaults applied). */
export type OperationPayload<Op extends HostOperation> = v.InferOutput<Specs[Op]["payload"]>;
/** The payload a client may send (before defaults). */
export type OperationInput<Op extends HostOperation> = v.InferInput<Specs[Op]["payload"]>;
/** The receipt of an accepted or adopted answer. */
export type OperationReceipt<Op extends HostOperation> = v.InferOutput<Specs[Op]["receipt"]>;
