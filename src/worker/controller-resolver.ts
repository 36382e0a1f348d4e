/**
 * `pi-workflows worker --resolve-controller`: the supervised controller source resolver. It
 * answers a series of requests, one at a time, for `controller.apply`: load the controller the
 * discovery rules name, report its exact source identity and digest, and compute
 * `initialStatus(spec)`. A loaded controller is reused only while every file of its source still
 * hashes the same; otherwise it is loaded afresh. The host checks the answer again before it
 * commits anything.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import {
  CONTROLLER_RESOLVE_RESULT_SCHEMA,
  type ControllerResolveRequest,
  type ControllerResolveResult,
  parseControllerResolveRequest,
} from "../protocol/controller-resolve.ts";
import { reconcileTimeoutMs } from "../controllers/define-controller.ts";
import { resolveControllerRef } from "../controllers/discovery.ts";
import { loadControllerFile, type LoadedController } from "../controllers/load-controller.ts";
import { errorMessage } from "../workflows/errors.ts";
import { toJson } from "../workflows/json-value.ts";
import { verifySourceIdentity } from "../workflows/sources/identity.ts";
import { defaultAgentDir } from "../workflows/sources/discovery.ts";
import type { WorkerChannel } from "./channel.ts";
import { flushCompileCache } from "./compile-cache.ts";

export type PushSubscriber = (handler: (value: unknown) => void) => void;

export async function serveControllerResolves(
  channel: WorkerChannel,
  subscribe: PushSubscriber,
): Promise<number> {
  const loaded = new Map<string, LoadedController>();
  let chain: Promise<void> = Promise.resolve();
  const serve = (value: unknown) => {
    chain = chain.then(async () => {
      const before = [...loaded.values()];
      const answer = await answerRequest(value, loaded);
      await channel.send(answer).catch(() => {});
      // After the answer, so it is not delayed: this resolve loaded modules afresh.
      if ([...loaded.values()].some((c) => !before.includes(c))) flushCompileCache();
    });
  };
  // The channel hands the first frame out separately; every frame is a request here.
  channel.firstFrame().then(serve, () => {});
  subscribe(serve);
  await channel.closed;
  return 0;
}

async function answerRequest(
  value: unknown,
  loaded: Map<string, LoadedController>,
): Promise<ControllerResolveResult> {
  const requestId = typeof (value as { requestId?: unknown })?.requestId === "string"
    ? (value as { requestId: string }).requestId
    : "invalid";
  const parsed = parseControllerResolveRequest(value);
  if (!parsed.ok) {
    return failed(requestId, "protocolRejected", parsed.error);
  }
  try {
    return await resolve(parsed.value, loaded);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return failed(
      requestId,
      typeof code === "string" ? code : "controllerLoadFailed",
      errorMessage(error, 2000),
    );
  }
}

async function resolve(
  request: ControllerResolveRequest,
  loaded: Map<string, LoadedController>,
): Promise<ControllerResolveResult> {
  const agentDir = request.agentDir ?? defaultAgentDir();
  const path = resolveControllerRef(request.controller, { cwd: request.cwd, agentDir });
  let controller = loaded.get(path);
  if (!controller || !verifySourceIdentity(controller.source).ok) {
    controller = await loadControllerFile(path);
    loaded.set(path, controller);
  }
  let initialStatus: JsonValue;
  try {
    const value: unknown = controller.definition.initialStatus(request.spec);
    if (value instanceof Promise) {
      throw new Error("initialStatus must return a value, not a promise");
    }
    initialStatus = toJson(value, "initial status");
  } catch (error) {
    return failed(
      request.requestId,
      "invalidSpec",
      `Spec refused by controller "${controller.definition.name}": ${errorMessage(error, 1000)}`,
    );
  }
  return {
    schema: CONTROLLER_RESOLVE_RESULT_SCHEMA,
    requestId: request.requestId,
    ok: true,
    name: controller.definition.name,
    sourceRef: controller.sourceRef,
    source: controller.source,
    sourceDigest: controller.sourceDigest,
    agentDir,
    timeoutMs: reconcileTimeoutMs(controller.definition),
    initialStatus,
  };
}

function failed(requestId: string, code: string, message: string): ControllerResolveResult {
  return {
    schema: CONTROLLER_RESOLVE_RESULT_SCHEMA,
    requestId,
    ok: false,
    code: code.slice(0, 128),
    message: message.slice(0, 8192),
  };
}
