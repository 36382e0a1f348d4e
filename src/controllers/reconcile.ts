/**
 * One reconcile pass inside a controller worker: builds the context (signal, result helpers,
 * managed effects, child workflows), calls the controller's `reconcile`, checks what it returned
 * and turns it into the outcome the host commits: the full new status (the patch applied to the
 * status the reconcile read), new finalizers, and when to look again. A throw, an invalid result
 * or an invalid patch is an `error` outcome (the host backs off), never a crash.
 */
import type { Budget } from "../protocol/budget.ts";
import { fingerprint, type JsonValue } from "../protocol/canonical-json.ts";
import {
  type ChildWorkflowRef,
  FinalizersSchema,
  ResourceKeySchema,
  type ResourceStatus,
  ResourceStatusSchema,
} from "../protocol/controller-resource.ts";
import { parseWith } from "../protocol/schema-issues.ts";
import type { ReconcileOutcome } from "../protocol/controller-worker.ts";

export type { ReconcileOutcome };
import { errorMessage, NodeFailure } from "../workflows/errors.ts";
import { toJson } from "../workflows/json-value.ts";
import { childWorkflowRecord, workflowRunRef } from "./child-workflow-record.ts";
import { applyStatusPatch } from "./conditions.ts";
import { externalRefOf, legacy012Result } from "./effect-results-012.ts";
import { requeue, requeueAfter, settled } from "./reconcile-results.ts";
import type {
  ControllerDefinition,
  EffectRequest,
  EffectResult,
  ReconcileContext,
  ReconcileResult,
  Resource,
  StatusPatch,
} from "./types.ts";

export type EffectReservation =
  | { effectId: string; state: "reserved" }
  | { effectId: string; state: "applied" | "rejected"; receipt: JsonValue | null }
  | { effectId: string; state: "ambiguous" | "cancelled" };

/** The worker's proposals to the host on behalf of one reconcile. */
export interface ReconcilePorts {
  reserveEffect(request: {
    kind: string;
    key: string;
    requestFingerprint: string;
    contract: "idempotencyKey" | "readBack" | "nonResumable";
  }): Promise<EffectReservation>;
  settleEffect(request: {
    effectId: string;
    /**
     * A read-back or idempotent effect: a crash before its settle commits repeats nothing, so
     * the worker may send the settle with the reconcile's end (one host commit less).
     */
    foldable?: boolean;
    outcome: "applied" | "rejected";
    receipt?: JsonValue;
    error?: { code: string; message: string };
  }): Promise<void>;
  ensureWorkflow(request: {
    requestKey: string;
    workflow: string;
    input: JsonValue;
    interactive?: boolean;
    /** The controller's budget: a total over all its child runs (state/budget-stop.ts). */
    budget?: Budget;
  }): Promise<ChildWorkflowRef>;
}

export async function runReconcile(
  definition: ControllerDefinition,
  resource: Resource,
  ports: ReconcilePorts,
  signal: AbortSignal,
  now: () => number,
): Promise<ReconcileOutcome> {
  let result: unknown;
  try {
    result = await definition.reconcile(
      reconcileContext(ports, signal, definition.budget, resource.metadata.uid),
      resource,
    );
  } catch (error) {
    return failure(error, "reconcileFailed");
  }
  try {
    return outcomeOf(result, resource, now);
  } catch (error) {
    return failure(error, "invalidResult");
  }
}

function failure(error: unknown, code: string): ReconcileOutcome {
  return {
    kind: "error",
    error: {
      code: error instanceof NodeFailure ? error.code : code,
      message: errorMessage(error, 2000),
    },
  };
}

function reconcileContext(
  ports: ReconcilePorts,
  signal: AbortSignal,
  budget: Budget | undefined,
  resourceUid: string,
): ReconcileContext {
  return {
    signal,
    effects: { ensure: (effect) => ensureEffect(ports, signal, effect) },
    workflows: {
      ensure: async (request) => {
        const key = parseWith(ResourceKeySchema, request?.requestKey, "requestKey");
        if (!key.ok) throw new NodeFailure("invalidRequest", `workflows.ensure: ${key.error}`);
        if (typeof request.workflow !== "string" || request.workflow.trim() === "") {
          throw new NodeFailure(
            "invalidRequest",
            "workflows.ensure: workflow must be a name or path",
          );
        }
        if (request.interactive !== undefined && typeof request.interactive !== "boolean") {
          throw new NodeFailure(
            "invalidRequest",
            "workflows.ensure: interactive must be true or false",
          );
        }
        const input = toJson(request.input ?? null, "workflow input");
        const ref = await ports.ensureWorkflow({
          requestKey: key.value,
          workflow: request.workflow,
          input,
          ...(request.interactive ? { interactive: true } : {}),
          ...(budget ? { budget: { ...budget } } : {}),
        });
        return childWorkflowRecord(ref, {
          resourceUid,
          requestKey: key.value,
          workflow: request.workflow,
          input,
        });
      },
    },
    settled,
    requeue,
    requeueAfter,
  };
}

async function ensureEffect(
  ports: ReconcilePorts,
  signal: AbortSignal,
  effect: EffectRequest,
): Promise<EffectResult> {
  if (typeof effect?.key !== "string" || effect.key.length < 1 || effect.key.length > 1000) {
    throw new NodeFailure("invalidEffect", "effects.ensure: key must be 1-1000 characters");
  }
  if (typeof effect.kind !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$/.test(effect.kind)) {
    throw new NodeFailure(
      "invalidEffect",
      "effects.ensure: kind must be 1-200 of [A-Za-z0-9._:-], e.g. file.write",
    );
  }
  if (typeof effect.apply !== "function") {
    throw new NodeFailure("invalidEffect", "effects.ensure: apply must be a function");
  }
  if (effect.observe !== undefined && typeof effect.observe !== "function") {
    throw new NodeFailure("invalidEffect", "effects.ensure: observe must be a function");
  }
  const { key, kind } = effect;
  const request = toJson(effect.request, "effect request");
  const contract = effect.observe
    ? "readBack"
    : effect.idempotent
    ? "idempotencyKey"
    : "nonResumable";
  const reservation = await ports.reserveEffect({
    kind,
    key,
    requestFingerprint: fingerprint({ kind, key, request }),
    contract,
  });
  const done = (
    state: EffectResult["state"],
    receipt: JsonValue | null,
    adopted: boolean,
    error?: string,
  ): EffectResult => {
    const externalRef = externalRefOf(receipt);
    return {
      key,
      kind,
      effectId: reservation.effectId,
      state,
      receipt,
      adopted,
      ...(externalRef !== undefined ? { externalRef } : {}),
      ...(error !== undefined ? { error } : {}),
    };
  };
  if (reservation.state !== "reserved") {
    return done(reservation.state, "receipt" in reservation ? reservation.receipt : null, true);
  }
  if (effect.observe) {
    const observed = await effect.observe(signal);
    const legacy = legacy012Result(observed);
    if (legacy?.state === "indeterminate" || legacy?.state === "rejected") {
      // Left reserved: the next reconcile observes again.
      throw new NodeFailure(
        "effectIndeterminate",
        `effects.ensure: observe could not tell whether effect "${key}" applied; the reconcile is retried`,
      );
    }
    if (observed !== null && observed !== undefined && legacy?.state !== "not_applied") {
      const receipt = toJson(observed, "observed effect receipt");
      await ports.settleEffect({ effectId: reservation.effectId, outcome: "applied", receipt });
      return done("applied", receipt, true);
    }
  }
  let output: unknown;
  try {
    output = await effect.apply(signal);
  } catch (error) {
    // Aborted: the outcome is unknown, the host decides (pending or ambiguous).
    if (!signal.aborted) {
      await ports.settleEffect({
        effectId: reservation.effectId,
        outcome: "rejected",
        error: { code: "effectRejected", message: errorMessage(error, 2000) },
      });
    }
    throw error;
  }
  const legacy = legacy012Result(output);
  if (legacy?.state === "rejected") {
    const message = legacy.error ?? "rejected";
    await ports.settleEffect({
      effectId: reservation.effectId,
      outcome: "rejected",
      error: { code: "effectRejected", message: message.slice(0, 2000) },
    });
    return done("rejected", null, false, message);
  }
  if (legacy?.state === "indeterminate" || legacy?.state === "not_applied") {
    // Unknown whether it applied: left reserved, so the next reconcile observes first.
    throw new NodeFailure(
      "effectIndeterminate",
      `effects.ensure: effect "${key}" may or may not have applied${
        legacy.state === "indeterminate" && legacy.error ? `: ${legacy.error}` : ""
      }; the reconcile is retried`,
    );
  }
  const receipt = toJson(output ?? null, "effect receipt");
  await ports.settleEffect({
    effectId: reservation.effectId,
    outcome: "applied",
    receipt,
    foldable: contract !== "nonResumable",
  });
  return done("applied", receipt, false);
}

function outcomeOf(result: unknown, resource: Resource, now: () => number): ReconcileOutcome {
  const r = result as ReconcileResult | null;
  if (typeof r !== "object" || r === null || (r.kind !== "settled" && r.kind !== "requeue")) {
    throw new NodeFailure(
      "invalidResult",
      "reconcile must return ctx.settled(), ctx.requeue() or ctx.requeueAfter(ms)",
    );
  }
  // 0.12 named the patch `status` in a hand-built result; both names mean the same.
  const legacy = (r as { status?: unknown }).status;
  if (r.patch !== undefined && legacy !== undefined) {
    throw new NodeFailure("invalidResult", "a reconcile result has patch or status, not both");
  }
  const patch = (r.patch ?? legacy ?? {}) as StatusPatch;
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) {
    throw new NodeFailure("invalidResult", "the status patch must be an object");
  }
  const merged = applyStatusPatch(
    resource.status,
    {
      ...patch,
      ...(patch.workflowRun ? { workflowRun: workflowRunRef(patch.workflowRun) as never } : {}),
      ...(Object.hasOwn(patch, "controllerStatus")
        ? { controllerStatus: toJson(patch.controllerStatus, "controllerStatus") }
        : {}),
    },
    resource.metadata.generation,
    new Date(now()).toISOString(),
  );
  const status = parseWith(ResourceStatusSchema, merged, "status");
  if (!status.ok) throw new NodeFailure("invalidResult", `Invalid status patch: ${status.error}`);
  let finalizers: string[] | undefined;
  if (patch.finalizers !== undefined) {
    const parsed = parseWith(FinalizersSchema, patch.finalizers, "finalizers");
    if (!parsed.ok) throw new NodeFailure("invalidResult", `Invalid status patch: ${parsed.error}`);
    finalizers = parsed.value;
  }
  return {
    kind: r.kind,
    status: status.value as ResourceStatus,
    ...(finalizers !== undefined ? { finalizers } : {}),
    ...(r.kind === "requeue" && r.afterMs !== undefined ? { afterMs: r.afterMs } : {}),
  };
}
