/**
 * Payloads and receipts of the `run.*` operations on the host socket. The envelope fields
 * (`runId`, `expectedRevision`, `idempotencyKey`) live in host-request.ts; these schemas cover
 * only `payload` and `receipt`.
 */
import * as v from "valibot";
import { PI_CONTEXTS, PiLaunchSchema } from "./pi-launch.ts";
import { BudgetSchema } from "./budget.ts";
import { CostSchema, StepUsageSchema } from "./step-usage.ts";
import { SubmissionTallySchema } from "./submissions.ts";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { JsonValueSchema } from "./run-facts.ts";
import { WaitingSchema } from "./decision-request.ts";
import { DefinitionSnapshotSchema } from "./definition-snapshot.ts";
import { RunEnvironmentSchema } from "./run-environment.ts";
import { MAX_PAGE_ITEMS } from "./page-limits.ts";
import { ATTEMPT_STATES, NODE_EFFECTS } from "./run-facts.ts";
import {
  AbsolutePathSchema,
  CountSchema,
  ErrorInfoSchema,
  looseObject,
  OpaqueIdSchema,
  RevisionSchema,
  ShortTextSchema,
  strictObject,
  TimestampSchema,
} from "./fields.ts";
import { RunNotificationSchema } from "./outbox-operations.ts";
import { EXECUTION_MODES, type ExecutionMode } from "./execution-mode.ts";

export const RUN_STATES = [
  "queued",
  "running",
  "waiting",
  "completed",
  "failed",
  "timed_out",
  "cancelled",
] as const;
export type RunState = (typeof RUN_STATES)[number];

export const QUEUE_STATES = [
  "queued",
  "starting",
  "running",
  "parked",
  "done",
  "failed",
  "cancelled",
] as const;
export type QueueState = (typeof QUEUE_STATES)[number];

/** Why a parked run waits for an operator rather than for the scheduler. */
export const BLOCKED_REASONS = [
  "workflowSourceChanged",
  "effectAmbiguous",
  "unsupportedInput",
  "credentialsMissing",
  "budgetExceeded",
] as const;
export type BlockedReason = (typeof BLOCKED_REASONS)[number];

export { EXECUTION_MODES, type ExecutionMode };

const EmptyPayloadSchema = v.optional(strictObject({}), {});

export { DEFAULT_STATUS_ATTEMPTS, MAX_PAGE_ITEMS } from "./page-limits.ts";

const RunStartFieldsSchema = strictObject({
  /** Workflow name, `builtin:<id>`, or a path (absolute, or relative to `cwd`). */
  workflow: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  /** Raw input, before the workflow's own normalizer; absent means `null`. */
  input: v.optional(ClientJsonValueSchema),
  /** The directory the request came from; the run's project is found from it. */
  cwd: AbsolutePathSchema,
  executionMode: v.optional(v.picklist(EXECUTION_MODES), "headless"),
  /** The Pi session an interactive run belongs to. */
  originSessionId: v.optional(OpaqueIdSchema),
  /**
   * The run environment the client defines (run-environment.ts); recorded privately with the
   * run. Absent: the allowlisted base of the host's own environment.
   */
  env: v.optional(RunEnvironmentSchema),
  /**
   * Headless runs: provider credentials for the run's Pi children (credential-names.ts). The
   * host keeps them in memory only, with any credential-looking `env` variable; never stored.
   */
  credentials: v.optional(RunEnvironmentSchema),
  /**
   * Headless runs: the Pi the client found and the model arguments to record with the run. A
   * headless run with agent steps and no `pi` is refused (`piUnavailable`).
   */
  pi: v.optional(PiLaunchSchema),
  /** Limits on what the run may spend; each wins over the workflow's own when smaller. */
  budget: v.optional(BudgetSchema),
});
export type RunStartPayload = v.InferOutput<typeof RunStartFieldsSchema>;

export const RunStartPayloadSchema: v.GenericSchema<
  v.InferInput<typeof RunStartFieldsSchema>,
  RunStartPayload
> = v.pipe(
  RunStartFieldsSchema,
  v.check(
    (p) => p.executionMode !== "interactive" || p.originSessionId !== undefined,
    "Invalid run.start: an interactive run needs originSessionId",
  ),
);

export const RunPausePayloadSchema = EmptyPayloadSchema;
/**
 * `credentials`: as in run.start, re-supplied by the resuming client (a host forgets them).
 * `acceptSource`: a run parked `workflowSourceChanged` re-pins to the workflow file as it is now,
 * after its history is checked against it (docs/when-a-run-fails.md); `operator` names who
 * accepted it in the run's events.
 */
export const RunResumePayloadSchema = v.optional(
  strictObject({
    credentials: v.optional(RunEnvironmentSchema),
    acceptSource: v.optional(v.boolean()),
    operator: v.optional(ShortTextSchema),
  }),
  {},
);
export const RunCancelPayloadSchema = v.optional(
  strictObject({ reason: v.optional(ShortTextSchema) }),
  {},
);

/** `run.budget`: raise a run's budget by these amounts (at least one). */
export const RunBudgetPayloadSchema = v.pipe(
  strictObject({
    raiseCostUsd: v.optional(v.pipe(CostSchema, v.minValue(0.000001))),
    raiseTokens: v.optional(v.pipe(CountSchema, v.minValue(1))),
  }),
  v.check(
    (p) => p.raiseCostUsd !== undefined || p.raiseTokens !== undefined,
    "Invalid run.budget: give raiseCostUsd, raiseTokens or both",
  ),
);

export const RunStatusPayloadSchema = v.optional(
  strictObject({
    /** Return events with a sequence number above this cursor (for `start --wait`). */
    eventsAfter: v.optional(CountSchema),
    /** At most this many events (default chosen by the host, never above 1000). */
    eventLimit: v.optional(v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(1000))),
    /** Also return the latest node updates (`status` shows them; following does not need them). */
    includeUpdates: v.optional(v.boolean()),
    /** Also return the run's latest notifications (`status` shows them). */
    includeNotifications: v.optional(v.boolean()),
    /**
     * At most this many attempts (default `DEFAULT_STATUS_ATTEMPTS`): the run's last ones, or
     * with `attemptsAfter` the first ones whose sequence is above that cursor. The host may send
     * fewer so that the answer fits one message; `attemptCount` says how many there are.
     */
    attemptLimit: v.optional(
      v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_PAGE_ITEMS)),
    ),
    attemptsAfter: v.optional(CountSchema),
    /** Also return the workflow's stored graph (`definition`): node kinds, status details. */
    includeDefinition: v.optional(v.boolean()),
  }),
  {},
);

export const RunListPayloadSchema = v.optional(
  strictObject({
    /** Include finished runs. */
    all: v.optional(v.boolean(), false),
    /** Newest first, at most this many (fewer when they would not fit one message). */
    limit: v.optional(
      v.pipe(v.number(), v.safeInteger(), v.minValue(1), v.maxValue(MAX_PAGE_ITEMS)),
      50,
    ),
    /** The `next` cursor of the previous page: the runs older than it. */
    before: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(300))),
  }),
  { all: false, limit: 50 },
);

/** Where a fork came from: the parent run and the node it reran from. */
export const ForkedFromSchema = looseObject({ runId: OpaqueIdSchema, nodeId: v.string() });

/** The public summary of one run, shared by every run receipt. */
export const RunSummarySchema = looseObject({
  runId: OpaqueIdSchema,
  workflowName: v.string(),
  title: v.optional(v.nullable(v.string())),
  state: v.picklist(RUN_STATES),
  queueState: v.picklist(QUEUE_STATES),
  paused: v.boolean(),
  /**
   * Set while the run is parked for review and will not move until an explicit resume or
   * cancel: its source changed, or an external effect may have applied without a receipt.
   */
  blockedReason: v.optional(v.nullable(v.picklist(BLOCKED_REASONS))),
  /**
   * Blocked `budgetExceeded`: the budget that stopped the run and its spend against it, e.g.
   * `spent $1.10 of $1.00`, or `controller sync's child runs spent $1.10 of $1.00` when its
   * controller's total over all its child runs stopped it.
   */
  budgetStop: v.optional(v.pipe(v.string(), v.maxLength(1024))),
  /**
   * Blocked `budgetExceeded`: the limits a raise must lift for the run to spend again (its own
   * or its controller's total), so `budget --raise` (`maxCostUsd`) or `--raise-tokens`
   * (`maxTokens`) is named right.
   */
  budgetRaise: v.optional(v.array(v.picklist(["maxCostUsd", "maxTokens"]))),
  /** A fork (`run.rerun`): the run it was forked from and the node it reran from. */
  forkedFrom: v.optional(ForkedFromSchema),
  revision: RevisionSchema,
  executionMode: v.picklist(EXECUTION_MODES),
  createdAt: TimestampSchema,
  updatedAt: TimestampSchema,
  /** Present when the run completed. */
  output: v.optional(JsonValueSchema),
  /** Present when the run failed, timed out or was cancelled with a reason. */
  error: v.optional(ErrorInfoSchema),
  /**
   * What the run's model steps used (present once they used anything, or with a budget):
   * all tokens, and the cost of the priced ones (null: no model had a price).
   */
  spend: v.optional(looseObject({
    tokens: CountSchema,
    cost: v.nullable(CostSchema),
    /** A fork: what its adopted attempts (the parent's prefix) cost, included above. */
    adopted: v.optional(looseObject({ tokens: CountSchema, cost: v.nullable(CostSchema) })),
  })),
  /** The run's budget (`defineWorkflow({ budget })`, `start --max-cost/--max-tokens`). */
  budget: v.optional(BudgetSchema),
});
export type RunSummary = v.InferOutput<typeof RunSummarySchema>;

export const AttemptSummarySchema = looseObject({
  attemptId: OpaqueIdSchema,
  nodeId: v.string(),
  sequence: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  nodeKind: v.string(),
  effect: v.picklist(NODE_EFFECTS),
  state: v.picklist(ATTEMPT_STATES),
  startedAt: TimestampSchema,
  finishedAt: v.optional(TimestampSchema),
  deadlineAt: v.nullable(TimestampSchema),
  error: v.optional(ErrorInfoSchema),
  /** A fork's adopted attempt: the parent's attempt it copies (it did not run again). */
  adoptedFrom: v.optional(OpaqueIdSchema),
  /** A model step's usage: tokens by kind, cost, provider and model (members of a group). */
  usage: v.optional(StepUsageSchema),
  /**
   * A model step's submissions once the model submitted: how many, how many the node's rules
   * rejected, and the last rejection's message (also when a later submission was accepted).
   */
  submissions: v.optional(SubmissionTallySchema),
});
export type AttemptSummary = v.InferOutput<typeof AttemptSummarySchema>;

/** An effect that may have applied without a receipt, as `run.status` reports it. */
export const AmbiguousEffectSummarySchema = looseObject({
  effectId: OpaqueIdSchema,
  attemptId: OpaqueIdSchema,
  nodeId: v.string(),
  /** False for an action or shell without a managed effect. */
  managed: v.boolean(),
});
export type AmbiguousEffectSummary = v.InferOutput<typeof AmbiguousEffectSummarySchema>;

/** One run event as `run.status` streams it (progress for `start --wait`). */
export const RunEventSchema = looseObject({
  seq: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  type: v.string(),
  at: TimestampSchema,
  nodeId: v.optional(v.string()),
  attemptId: v.optional(OpaqueIdSchema),
  data: v.optional(JsonValueSchema),
});
export type RunEvent = v.InferOutput<typeof RunEventSchema>;

/** Receipt of run.start, run.pause, run.resume and run.cancel: the run as the command left it. */
export const RunCommandReceiptSchema = looseObject({ run: RunSummarySchema });

/** The latest update of one (type, key) of a run, as `run.status` returns it on request. */
export const UpdateSummarySchema = looseObject({
  nodeId: v.string(),
  attemptId: OpaqueIdSchema,
  type: v.string(),
  key: v.string(),
  data: JsonValueSchema,
  /** How many updates of this (type, key) arrived. */
  count: v.pipe(v.number(), v.safeInteger(), v.minValue(1)),
  updatedAt: TimestampSchema,
});
export type UpdateSummary = v.InferOutput<typeof UpdateSummarySchema>;

/**
 * `run.status`'s `interaction`: the origin-session step a waiting interactive run waits on (its
 * Pi session answers it with the `workflow` tool, not `checkpoint.answer`). Ids and times only:
 * no prompt, contract, session id or session entry id.
 */
export const RunInteractionSchema = looseObject({
  interactionId: OpaqueIdSchema,
  nodeId: v.string(),
  attemptId: OpaqueIdSchema,
  /** `agent`, `decision` or `assistantMessage`. */
  nodeKind: v.string(),
  /** When the request was committed. */
  since: TimestampSchema,
  /** The attempt's resolved deadline, which the host enforces with no worker alive. */
  deadlineAt: v.nullable(TimestampSchema),
  /** The session showed the step (its entry is recorded). */
  presented: v.boolean(),
  /** Reminders shown after a turn ended without a submission (two at most). */
  reminders: CountSchema,
  /** Submissions so far, and whether one is being validated now. */
  submissions: CountSchema,
  validating: v.boolean(),
});
export type RunInteraction = v.InferOutput<typeof RunInteractionSchema>;

/** A headless run's Pi: what its children load and the run's session file (`pi --session`). */
export const RunPiSchema = looseObject({
  context: v.picklist(PI_CONTEXTS),
  sessionFile: AbsolutePathSchema,
});
export type RunPi = v.InferOutput<typeof RunPiSchema>;

export const RunStatusReceiptSchema = looseObject({
  run: RunSummarySchema,
  /** A headless run with Pi: what its Pi children load and its session file. */
  pi: v.optional(RunPiSchema),
  attempts: v.optional(v.array(AttemptSummarySchema)),
  /** Present while the run waits at a checkpoint or human decision: what it asks. */
  waiting: v.optional(WaitingSchema),
  /** Present while an interactive run waits on a step in its Pi session. */
  interaction: v.optional(RunInteractionSchema),
  /** With `includeUpdates`: the latest updates, newest first (at most 100). */
  updates: v.optional(v.array(UpdateSummarySchema)),
  /** With `includeNotifications`: the run's latest 20 notifications, oldest first. */
  notifications: v.optional(v.array(RunNotificationSchema)),
  /** How many attempts the run has (`attempts` is a page of them). */
  attemptCount: v.optional(CountSchema),
  events: v.optional(v.array(RunEventSchema)),
  /** The cursor to send as `eventsAfter` next time. */
  lastEventSeq: v.optional(CountSchema),
  /** With `eventsAfter`, while a step runs: the last line it printed (control characters out). */
  lastOutput: v.optional(looseObject({ attemptId: OpaqueIdSchema, line: v.string() })),
  /** Effects that may have applied without a receipt (resolve them with `effect.resolve`). */
  ambiguousEffects: v.optional(v.array(AmbiguousEffectSummarySchema)),
  /**
   * A run blocked `workflowSourceChanged`: each file (or built-in) that differs from what the
   * run started with, why, and for a file its digest then and now (null: it cannot be read).
   */
  sourceChanges: v.optional(v.array(looseObject({
    source: v.string(),
    reason: v.string(),
    recorded: v.optional(v.string()),
    current: v.optional(v.nullable(v.string())),
    /** The run's own workflow, not a file or built-in it mounted. */
    root: v.optional(v.boolean()),
  }))),
  /** With `includeDefinition`: the run's stored definition snapshot (absent for older runs). */
  definition: v.optional(DefinitionSnapshotSchema),
});
export type RunStatusReceipt = v.InferOutput<typeof RunStatusReceiptSchema>;

export const RunListReceiptSchema = looseObject({
  runs: v.array(RunSummarySchema),
  /** How many runs match (`runs` is a page of them). */
  total: v.optional(CountSchema),
  /** Send as `before` for the next page; absent on the last page. */
  next: v.optional(v.string()),
});
