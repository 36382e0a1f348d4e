/**
 * What each reconcile proposal commits, under the reconcile's own claim (the host holds it; the
 * worker never writes): effects, child workflows and the result. A fenced reconcile gets
 * `ClaimLostError` from the transition and nothing changes. Every transition joins the host's
 * next group commit (commit-group.ts) with the other workers' messages of the same event-loop
 * turn; its answer leaves only after that COMMIT.
 */
import type { Budget } from "../../protocol/budget.ts";
import { fingerprint, type JsonValue } from "../../protocol/canonical-json.ts";
import type { ControllerMessage, ReconcileOutcome } from "../../protocol/controller-worker.ts";
import {
  ensureChildRequest,
  failChildRequest,
  startChildRun,
} from "../../state/controllers/child-workflows.ts";
import {
  reserveReconcileEffect,
  settleReconcileEffect,
} from "../../state/controllers/reconcile-effects.ts";
import { finishReconcile, type ReconcileEndResult } from "../../state/controllers/reconcile-end.ts";
import { readPinnedController } from "../../state/controllers/controller-workers.ts";
import { resolvedRunFields } from "../resolved-run.ts";
import type { HostContext, ResolveRequest, ResolveResult } from "../host-context.ts";
import { inNextCommit } from "../commit-group.ts";
import type {
  ActiveReconcile,
  ControllerWorker,
} from "../supervision/controllers/controller-worker.ts";

export interface ReconcileHandlerDeps {
  /** The workflow source resolver (a supervised child), for child runs. */
  resolveWorkflow(request: ResolveRequest): Promise<ResolveResult>;
  /** Backoff after `errors` errors in a row. */
  retryDelayMs(errors: number): number;
  /** A child run was enqueued: the run scheduler should look. */
  wakeRuns(): void;
  /** The reconcile's end committed. */
  onEnded(worker: ControllerWorker, reconcile: ActiveReconcile, end: ReconcileEndResult): void;
}

type ReconcileMessage = Extract<
  ControllerMessage,
  { kind: "effect.reserve" | "effect.settle" | "workflow.ensure" | "reconcile.finished" }
>;

export async function applyReconcileMessage(
  ctx: HostContext,
  deps: ReconcileHandlerDeps,
  worker: ControllerWorker,
  reconcile: ActiveReconcile,
  message: ReconcileMessage,
): Promise<JsonValue | undefined> {
  const { store } = ctx;
  const { claim, uid } = reconcile;
  switch (message.kind) {
    case "effect.reserve": {
      const p = message.payload;
      const result = await inNextCommit(store, () =>
        reserveReconcileEffect(store, claim, {
          uid,
          kind: p.kind,
          key: p.key,
          requestFingerprint: p.requestFingerprint,
          contract: p.contract,
        }));
      return result.decision === "apply"
        ? { effectId: result.effectId, state: "reserved" }
        : result.decision === "adopt"
        ? { effectId: result.effectId, state: result.state, receipt: result.receipt }
        : { effectId: result.effectId, state: result.state };
    }
    case "effect.settle": {
      const p = message.payload;
      await inNextCommit(store, () =>
        settleReconcileEffect(store, claim, {
          uid,
          effectId: p.effectId,
          outcome: p.outcome,
          ...(p.receipt !== undefined ? { receipt: p.receipt } : {}),
          ...(p.error ? { errorCode: p.error.code } : {}),
        }));
      return undefined;
    }
    case "workflow.ensure":
      return await ensureChildWorkflow(ctx, deps, worker, reconcile, message.payload);
    case "reconcile.finished": {
      const settle = message.payload.settle;
      const end = await inNextCommit(store, () =>
        finishReconcile(store, claim, {
          uid,
          expectedResourceVersion: reconcile.resourceVersion,
          outcome: message.payload.outcome as ReconcileOutcome,
          retryDelayMs: deps.retryDelayMs(reconcile.consecutiveErrors + 1),
          ...(settle
            ? {
              settle: {
                effectId: settle.effectId,
                outcome: settle.outcome,
                ...(settle.receipt !== undefined ? { receipt: settle.receipt } : {}),
              },
            }
            : {}),
        }));
      deps.onEnded(worker, reconcile, end);
      return { conflict: end.conflict, removed: end.removed };
    }
  }
}

async function ensureChildWorkflow(
  ctx: HostContext,
  deps: ReconcileHandlerDeps,
  worker: ControllerWorker,
  reconcile: ActiveReconcile,
  request: {
    requestKey: string;
    workflow: string;
    input: JsonValue;
    interactive?: boolean;
    budget?: Budget;
  },
): Promise<JsonValue> {
  const { store } = ctx;
  const { claim, uid } = reconcile;
  const interactive = request.interactive === true;
  const decision = await inNextCommit(store, () =>
    ensureChildRequest(store, claim, {
      uid,
      requestKey: request.requestKey,
      workflow: request.workflow,
      inputFingerprint: fingerprint(request.input),
      interactive,
    }));
  if (decision.kind === "existing") return decision.ref;
  const resolved = await deps.resolveWorkflow({
    workflow: request.workflow,
    input: request.input,
    cwd: worker.projectPath,
  });
  const target = { uid, requestId: decision.requestId, attempt: decision.attempt };
  if (!resolved.ok) {
    return await inNextCommit(store, () =>
      failChildRequest(store, claim, {
        ...target,
        error: { code: resolved.code, message: resolved.message },
      }));
  }
  // An interactive child's agent steps run in its session, so only a headless one needs Pi.
  if (
    !interactive && resolved.needsAgent && !resolved.needsInteractive &&
    !readPinnedController(store, worker.controllerId)?.pi
  ) {
    return await inNextCommit(store, () =>
      failChildRequest(store, claim, {
        ...target,
        error: {
          code: "piUnavailable",
          message: `Workflow "${resolved.workflowName}" has agent steps and no Pi was declared ` +
            "for this controller: apply it again from a shell where Pi is installed " +
            "(or PI_WORKFLOWS_PI is set)",
        },
      }));
  }
  const ref = await inNextCommit(store, () =>
    startChildRun(store, claim, {
      ...target,
      // The controller's budget is a total over its children (state/budget-stop.ts), not the
      // child's own: the child keeps its workflow's.
      run: resolvedRunFields(resolved, worker.projectPath),
      ...(request.budget ? { poolBudget: request.budget } : {}),
      ...(resolved.needsInteractive && !interactive
        ? {
          blocked: {
            reason: "unsupportedInput" as const,
            detail: `Workflow "${resolved.workflowName}" has an assistant-message step, which ` +
              "needs an origin Pi session; this child was not ensured with interactive: true " +
              "(cancel this run)",
          },
        }
        : {}),
    }));
  deps.wakeRuns();
  return ref;
}
