/**
 * `controller.list`, `controller.get`, `controller.apply`, `controller.reconcile`,
 * `controller.delete`, `controller.bind` and `controller.unbind`. Apply has a supervised resolver child load the controller (the host runs
 * no controller code), then checks, before it commits, that the resolved source is still the one
 * the discovery rules find and that every file still has the hash it was loaded with (and, when
 * the caller named one, the exact digest). Each change commits with its receipt in one
 * transaction; the scheduler is woken after.
 */
import { realpathSync } from "node:fs";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { type HostRequest, requestFor } from "../protocol/host-request.ts";
import type {
  HostOperation,
  OperationPayload,
  OperationReceipt,
} from "../protocol/host-operations.ts";
import { failureResponse, type HostResponse, receiptResponse } from "../protocol/host-response.ts";
import { resolveControllerRef } from "../controllers/discovery.ts";
import { controllerSourceDigest } from "../controllers/source-identity.ts";
import {
  listControllers,
  listResources,
  readResourceDetail,
} from "../state/controllers/controller-queries.ts";
import { resourceNotFound } from "../state/controllers/errors.ts";
import {
  applyResource,
  type ApplyResourceResult,
  type ControllerReceipt,
  requestDeletion,
  requestReconcile,
  type ResourceCommandOptions,
} from "../state/controllers/resources.ts";
import {
  approveSessionBinding,
  revokeSessionBinding,
  type SessionBindingTarget,
} from "../state/controllers/session-bindings.ts";
import type { CommandReceiptInput } from "../state/host-commands.ts";
import { describeSourceChanges, verifySourceIdentity } from "../workflows/sources/identity.ts";
import type { ControllerResolution } from "./supervision/controllers/resolver-pool.ts";
import type { HostRuntime } from "./host-runtime.ts";

function reject(rt: HostRuntime, request: HostRequest, code: string, message: string) {
  return failureResponse({
    requestId: request.requestId,
    hostEpoch: rt.epoch,
    outcome: "rejected",
    code,
    message,
  });
}

function answer<Op extends HostOperation>(
  rt: HostRuntime,
  request: { operation: Op; requestId: string },
  receipt: OperationReceipt<Op>,
  revision?: number,
): HostResponse {
  return receiptResponse(request, rt.epoch, receipt, revision !== undefined ? { revision } : {});
}

/** The canonical project path, or null when the directory does not exist. */
function projectOf(cwd: string): string | null {
  try {
    return realpathSync(cwd);
  } catch {
    return null;
  }
}

const NO_PROJECT = "The project directory (cwd) does not exist";

export function controllerListQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const listRequest = requestFor(request, "controller.list");
  const payload = listRequest.payload;
  const projectPath = projectOf(payload.cwd);
  if (projectPath === null) return reject(rt, request, "invalidCwd", NO_PROJECT);
  const controllers = listControllers(rt.store, projectPath)
    .filter((c) => payload.controller === undefined || c.name === payload.controller);
  const resources = listResources(rt.store, {
    projectPath,
    ...(payload.controller !== undefined ? { name: payload.controller } : {}),
  });
  return answer(rt, listRequest, { controllers, resources });
}

export function controllerGetQuery(rt: HostRuntime, request: HostRequest): HostResponse {
  const getRequest = requestFor(request, "controller.get");
  const payload = getRequest.payload;
  const projectPath = projectOf(payload.cwd);
  if (projectPath === null) return reject(rt, request, "invalidCwd", NO_PROJECT);
  const detail = readResourceDetail(rt.store, {
    projectPath,
    name: payload.controller,
    key: payload.key,
    ...(payload.events !== undefined ? { events: payload.events } : {}),
  });
  if (!detail) throw resourceNotFound(payload.controller, payload.key);
  return answer(
    rt,
    getRequest,
    detail,
    detail.resource.metadata.resourceVersion,
  );
}

export async function applyControllerCommand(
  rt: HostRuntime,
  request: HostRequest,
  receipt: CommandReceiptInput,
): Promise<HostResponse> {
  const apply = requestFor(request, "controller.apply");
  const payload = apply.payload;
  const projectPath = projectOf(payload.cwd);
  if (projectPath === null) return reject(rt, request, "invalidCwd", NO_PROJECT);
  const spec = (payload.spec ?? null) as JsonValue;
  const resolved = await rt.supervision.controllers.resolve({
    controller: payload.controller,
    cwd: projectPath,
    spec,
  });
  if (!resolved.ok) return reject(rt, request, resolved.code, resolved.message);
  const problem = sourceProblem(resolved, payload.controller, projectPath, payload.sourceDigest);
  if (problem !== null) return reject(rt, request, "sourceChanged", problem);
  const body = (r: ApplyResourceResult): OperationReceipt<"controller.apply"> => ({
    resource: r.resource,
    created: r.created,
    changed: r.changed,
    repinned: r.repinned,
    sourceDigest: resolved.sourceDigest,
  });
  const result = applyResource(rt.store, {
    controller: {
      projectPath,
      name: resolved.name,
      sourceRef: resolved.sourceRef,
      source: resolved.source,
      sourceDigest: resolved.sourceDigest,
      timeoutMs: resolved.timeoutMs,
      ...(payload.pi ? { pi: payload.pi } : {}),
    },
    key: payload.key,
    spec,
    initialStatus: resolved.initialStatus,
    expectedResourceVersion: request.expectedRevision,
    receipt: { input: receipt, body },
  });
  rt.log("controller.applied", {
    controller: resolved.name,
    created: result.created,
    changed: result.changed,
    repinned: result.repinned,
  });
  if (result.changed || result.repinned) rt.supervision.controllers.wake();
  return answer(rt, apply, body(result), result.resource.metadata.resourceVersion);
}

/**
 * Why the resolved source must not be pinned, or null: the discovery rules must still find the
 * same file, every file must still hash as loaded, and the digest must be the caller's.
 */
function sourceProblem(
  resolved: Extract<ControllerResolution, { ok: true }>,
  reference: string,
  projectPath: string,
  expectedDigest: string | undefined,
): string | null {
  let found: string;
  try {
    found = resolveControllerRef(reference, { cwd: projectPath, agentDir: resolved.agentDir });
  } catch {
    return "Controller source changed while it was resolved: the file is gone; apply again";
  }
  if (
    found !== resolved.sourceRef || resolved.source.root.kind !== "file" ||
    resolved.source.root.path !== found
  ) {
    return "Controller source changed while it was resolved: another file now has this name; " +
      "apply again";
  }
  const check = verifySourceIdentity(resolved.source);
  if (!check.ok) {
    return `${describeSourceChanges(check.changed)} while the controller was resolved; apply again`;
  }
  if (controllerSourceDigest(resolved.source) !== resolved.sourceDigest) {
    return "Controller source digest does not match its files; apply again";
  }
  if (expectedDigest !== undefined && expectedDigest !== resolved.sourceDigest) {
    return `Controller source is ${resolved.sourceDigest}, not the expected ${expectedDigest}`;
  }
  return null;
}

/** `controller.reconcile` and `controller.delete`: one resource transition with its receipt. */
function resourceCommand<
  R extends { resource: ApplyResourceResult["resource"] },
  Op extends "controller.reconcile" | "controller.delete",
>(
  operation: Op,
  transition: (store: HostRuntime["store"], opts: ResourceCommandOptions<R>) => R,
  body: (result: R) => OperationReceipt<Op>,
) {
  return (rt: HostRuntime, request: HostRequest, receipt: CommandReceiptInput): HostResponse => {
    const payload = requestFor(request, operation).payload;
    const projectPath = projectOf(payload.cwd);
    if (projectPath === null) return reject(rt, request, "invalidCwd", NO_PROJECT);
    const result = transition(rt.store, {
      projectPath,
      name: payload.controller,
      key: payload.key,
      expectedResourceVersion: request.expectedRevision,
      receipt: { input: receipt, body },
      ...("resolveEffect" in payload && payload.resolveEffect
        ? { resolveEffect: payload.resolveEffect }
        : {}),
    });
    rt.supervision.controllers.wake();
    return answer(
      rt,
      { operation, requestId: request.requestId },
      body(result),
      result.resource.metadata.resourceVersion,
    );
  };
}

export const reconcileControllerCommand = resourceCommand(
  "controller.reconcile",
  requestReconcile,
  (r) => ({
    resource: r.resource,
    ...(r.resolvedEffect ? { resolvedEffect: r.resolvedEffect } : {}),
  }),
);

export const deleteControllerCommand = resourceCommand(
  "controller.delete",
  requestDeletion,
  (r) => ({ resource: r.resource, removed: r.removed }),
);

/**
 * `controller.bind` (the session named in the payload approves itself for the controller's
 * interactive child runs) and `controller.unbind`, each one transition with its receipt. The
 * session id goes to the state only; the log names the controller.
 */
function bindingCommand<Op extends "controller.bind" | "controller.unbind">(
  operation: Op,
  run: (
    rt: HostRuntime,
    payload: OperationPayload<Op>,
    target: SessionBindingTarget & { receipt: ControllerReceipt<OperationReceipt<Op>> },
  ) => OperationReceipt<Op>,
) {
  return (rt: HostRuntime, request: HostRequest, receipt: CommandReceiptInput): HostResponse => {
    const payload = requestFor(request, operation).payload;
    const projectPath = projectOf(payload.cwd);
    if (projectPath === null) return reject(rt, request, "invalidCwd", NO_PROJECT);
    const result = run(rt, payload, {
      projectPath,
      name: payload.controller,
      receipt: { input: receipt, body: (r) => r },
    });
    return answer(rt, { operation, requestId: request.requestId }, result);
  };
}

export const bindControllerCommand = bindingCommand("controller.bind", (rt, payload, target) => {
  const result = approveSessionBinding(rt.store, { ...target, sessionId: payload.sessionId });
  rt.log("controller.sessionBound", { controller: result.controller, replaced: result.replaced });
  if (!result.unchanged) rt.supervision.controllers.wake();
  return result;
});

export const unbindControllerCommand = bindingCommand("controller.unbind", (rt, _, target) => {
  const result = revokeSessionBinding(rt.store, target);
  rt.log("controller.sessionUnbound", { controller: result.controller });
  return result;
});
