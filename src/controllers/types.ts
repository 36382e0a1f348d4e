/**
 * The controller authoring types. A controller is a level-triggered reconciler: the host keeps
 * its resources durable and calls `reconcile(ctx, resource)` (in a supervised controller worker)
 * whenever a resource may need work; the code looks at the spec and status, ensures effects and
 * child workflows, and says whether the resource is settled or needs another look.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type {
  ChildWorkflowRef,
  ChildWorkflowState,
  Condition,
  ConditionStatus,
  ResourceMetadata,
} from "../protocol/controller-resource.ts";
import type { ResultError } from "../workflows/result-error.ts";

export type { ChildWorkflowRef, ChildWorkflowState, Condition, ConditionStatus, ResourceMetadata };

export type MaybePromise<T> = T | Promise<T>;

export const CONTROLLER_BRAND: unique symbol = Symbol.for("pi-workflows.controller") as never;

/** The status the host keeps for a resource; `controllerStatus` is the controller's own part. */
export interface ControllerStatus<TStatus = JsonValue> {
  /** The generation the last successful reconcile saw. */
  observedGeneration: number;
  conditions: Condition[];
  controllerStatus: TStatus;
  /** A child workflow the controller chose to record here. */
  workflowRun?: ChildWorkflowRef;
}

export interface Resource<TSpec = JsonValue, TStatus = JsonValue> {
  metadata: ResourceMetadata;
  spec: TSpec;
  status: ControllerStatus<TStatus>;
}

/** A condition as a reconcile reports it; the host adds generation and transition time. */
export interface ConditionInput {
  type: string;
  status: ConditionStatus;
  reason: string;
  message?: string;
}

/** What a reconcile changes in the status. Fields left out keep their value. */
export interface StatusPatch<TStatus = JsonValue> {
  controllerStatus?: TStatus;
  /** Merged by type: a condition of a new status gets a new transition time. */
  conditions?: ConditionInput[];
  /** `null` removes it. A record from `ctx.workflows.ensure` is kept as its reference. */
  workflowRun?: ChildWorkflowRef | ChildWorkflowRecord | null;
  /** Replaces the finalizers. A resource being deleted is removed once they are empty. */
  finalizers?: string[];
}

export type ReconcileResult<TStatus = JsonValue> =
  | { kind: "settled"; patch?: StatusPatch<TStatus> }
  | { kind: "requeue"; afterMs?: number; patch?: StatusPatch<TStatus> };

/** `ctx.effects.ensure`: a managed side effect, applied at most once per key and resource. */
export interface EffectRequest<TRequest extends JsonValue = JsonValue> {
  /** Names the external effect (1-1000 characters), e.g. `write-${spec.path}-${generation}`. */
  key: string;
  /** The effect's type, e.g. `file.write`, `http.post` (part of the key). */
  kind: string;
  /** What the effect does; the same key with another request is refused. */
  request: TRequest;
  /**
   * Reads back whether the effect already applied. It runs before `apply` whenever the effect is
   * not settled yet (first time, or after a crash): a non-null value is the receipt and nothing
   * is applied.
   */
  observe?: (signal: AbortSignal) => MaybePromise<JsonValue | null | undefined>;
  /**
   * Applying again under the same key is harmless (the external system deduplicates by key, or
   * the effect is idempotent): after a crash mid-apply it is applied again. Without `observe` and
   * without this, an effect interrupted mid-apply cannot be proven and becomes `ambiguous`.
   */
  idempotent?: boolean;
  /** Applies the effect; its JSON result is the receipt later reconciles adopt. */
  apply: (signal: AbortSignal) => MaybePromise<JsonValue | void>;
}

export interface EffectResult {
  key: string;
  kind: string;
  effectId: string;
  /**
   * `applied` (now or earlier: `adopted`), `rejected` (apply threw earlier; the key stays
   * rejected), `ambiguous` (it may have applied without a receipt: an operator must resolve it)
   * or `cancelled`.
   */
  state: "applied" | "rejected" | "ambiguous" | "cancelled";
  receipt: JsonValue | null;
  /** The result was stored by an earlier reconcile; nothing ran now. */
  adopted: boolean;
  /** The receipt's `externalRef` when it is a string (0.12's effect record had it). */
  externalRef?: string;
  /** Why a `{state: "rejected", error}` result (0.12's form) was rejected. */
  error?: string;
}

export interface ChildWorkflowRequest {
  /** One child per key and resource; the same key with another workflow or input is refused. */
  requestKey: string;
  /** A workflow name, `builtin:<id>` or path, resolved in the controller's project. */
  workflow: string;
  input?: JsonValue;
  /**
   * Run the child in the Pi session a person approved for this controller (`/controller bind`),
   * as an interactive run: its agent and assistant-message steps happen in that session. Without
   * an approved session it waits (`unsupportedInput`); while the session runs another workflow,
   * `sessionBusy`. Default: headless.
   */
  interactive?: boolean;
}

/**
 * What `ctx.workflows.ensure` resolves to: the child's reference plus the request it answers
 * (0.12's names). `error` is `{code, message}` and becomes the message in a string.
 */
export interface ChildWorkflowRecord extends Omit<ChildWorkflowRef, "error"> {
  error?: ResultError;
  /** The resource's `metadata.uid`. */
  resourceUid: string;
  requestKey: string;
  /** The hex sha256 of the input's canonical JSON. */
  inputFingerprint: string;
  /** The workflow as the request named it. */
  workflow: string;
}

export interface ReconcileContext<TStatus = JsonValue> {
  /** Fires at the reconcile deadline, on host shutdown, and when the claim is lost. */
  signal: AbortSignal;
  effects: { ensure<R extends JsonValue>(effect: EffectRequest<R>): Promise<EffectResult> };
  workflows: { ensure(request: ChildWorkflowRequest): Promise<ChildWorkflowRecord> };
  settled(patch?: StatusPatch<TStatus>): ReconcileResult<TStatus>;
  requeue(patch?: StatusPatch<TStatus>): ReconcileResult<TStatus>;
  requeueAfter(ms: number, patch?: StatusPatch<TStatus>): ReconcileResult<TStatus>;
}

export interface ControllerSpec<TSpec = JsonValue, TStatus = JsonValue> {
  /** Lowercase letters, digits and `-`; the file is `<name>.controller.ts`. */
  name: string;
  /** The `controllerStatus` of a new resource; throw to refuse the spec. */
  initialStatus(spec: TSpec): TStatus;
  reconcile(
    ctx: ReconcileContext<TStatus>,
    resource: Resource<TSpec, TStatus>,
  ): MaybePromise<ReconcileResult<TStatus>>;
  /** Deadline of one reconcile (default 60 s); the host requeues it even if the code hangs. */
  timeoutMs?: number;
  /**
   * What the controller's child workflow runs may spend together (the shape of
   * `defineWorkflow({ budget })`): a total over all of them, beside each child's own budget.
   */
  budget?: { maxCostUsd?: number; maxTokens?: number };
}

export type ControllerDefinition<TSpec = JsonValue, TStatus = JsonValue> =
  & Readonly<ControllerSpec<TSpec, TStatus>>
  & { readonly [CONTROLLER_BRAND]: true };
