/**
 * `pi-workflows worker --controller`: one controller at its pinned source, several reconciles at
 * once. It says `controller.ready`, verifies the pinned source by hashing before it loads any
 * module, loads it and compares the loaded identity again (a mismatch or a load failure is
 * `controller.blocked`: changed code never runs), then runs each `reconcile.assign` the host
 * pushes until the channel closes.
 *
 * Every reconcile proposes through the host under its own claim; a `claimLost` answer (deadline,
 * fencing) aborts that reconcile's signal and nothing of it is committed afterwards.
 */
import type { JsonValue } from "../protocol/canonical-json.ts";
import type { ChildWorkflowRef } from "../protocol/controller-resource.ts";
import {
  CONTROLLER_LAUNCH_SCHEMA,
  type ControllerLaunch,
  type ControllerMessageKind,
  type ControllerPush,
  parseControllerLaunch,
  parseControllerPush,
} from "../protocol/controller-worker.ts";
import { crashPoint } from "../base/crash-point.ts";
import {
  compareSourceIdentity,
  describeSourceChanges,
  verifySourceIdentity,
} from "../workflows/sources/identity.ts";
import type { WorkerChannel } from "./channel.ts";
import type { PushSubscriber } from "./controller-resolver.ts";
import { WORKER_EXIT } from "./exit-codes.ts";
import { acceptedVerdict, ClaimLostStop } from "./proposer.ts";

type Propose = (
  kind: ControllerMessageKind,
  payload: Record<string, JsonValue | undefined>,
  reconcileId?: string,
) => Promise<JsonValue | undefined>;

export async function runControllerWorker(
  channel: WorkerChannel,
  subscribe: PushSubscriber,
): Promise<number> {
  const parsed = parseControllerLaunch(await channel.firstFrame());
  if (!parsed.ok) throw new Error(`Controller worker launch rejected: ${parsed.error}`);
  const launch = parsed.value;
  const propose = proposerFor(channel, launch);
  await propose("controller.ready", { pid: process.pid });
  const loaded = await loadPinned(launch);
  if (!loaded.ok) {
    await propose("controller.blocked", { reason: loaded.reason, detail: loaded.detail });
    return WORKER_EXIT.done;
  }
  const { runReconcile } = await import("../controllers/reconcile.ts");
  const active = new Map<string, AbortController>();
  subscribe((value) => {
    const push = parseControllerPush(value);
    if (!push.ok) {
      process.stderr.write(`Controller worker: ignored a malformed push: ${push.error}\n`);
      return;
    }
    if (push.value.kind === "reconcile.abort") {
      active.get(push.value.reconcileId)?.abort(
        new DOMException(`Reconcile stopped: ${push.value.reason}`, "AbortError"),
      );
      return;
    }
    const assign = push.value;
    const abort = new AbortController();
    active.set(assign.reconcileId, abort);
    const deadline = setTimeout(
      () => abort.abort(new DOMException("Reconcile deadline passed", "TimeoutError")),
      Math.max(0, assign.deadlineAt - Date.now()),
    );
    void reconcileOne(loaded.definition, assign, propose, abort, runReconcile).finally(() => {
      clearTimeout(deadline);
      active.delete(assign.reconcileId);
    });
  });
  await channel.closed;
  return WORKER_EXIT.done;
}

type RunReconcile = typeof import("../controllers/reconcile.ts").runReconcile;
type Definition = import("../controllers/types.ts").ControllerDefinition;

async function reconcileOne(
  definition: Definition,
  assign: Extract<ControllerPush, { kind: "reconcile.assign" }>,
  propose: Propose,
  abort: AbortController,
  runReconcile: RunReconcile,
): Promise<void> {
  const id = assign.reconcileId;
  const send = async (
    kind: ControllerMessageKind,
    payload: Record<string, JsonValue | undefined>,
  ) => {
    try {
      return await propose(kind, payload, id);
    } catch (error) {
      // Fenced (deadline, another claim): nothing more of this reconcile can commit.
      if (error instanceof ClaimLostStop) abort.abort(error);
      throw error;
    }
  };
  // A foldable settle (see ReconcilePorts) waits for the end of this event-loop turn: a
  // reconcile that returns right after its `ensure` answered sends it inside
  // `reconcile.finished`; any other proposal, or the next turn, sends it on its own first.
  let deferred: DeferredSettle | null = null;
  let settling: Promise<unknown> = Promise.resolve();
  const flush = () => {
    if (deferred) {
      clearImmediate(deferred.timer);
      settling = send("effect.settle", deferred.payload);
      deferred = null;
    }
    return settling;
  };
  const proposal = async (
    kind: ControllerMessageKind,
    payload: Record<string, JsonValue | undefined>,
  ) => {
    await flush();
    return await send(kind, payload);
  };
  const outcome = await runReconcile(
    definition,
    assign.resource as never,
    {
      reserveEffect: async (request) => (await proposal("effect.reserve", { ...request })) as never,
      settleEffect: async ({ foldable, ...request }) => {
        if (!foldable || request.outcome !== "applied") {
          await proposal("effect.settle", { ...request });
          return;
        }
        await flush();
        deferred = {
          payload: { ...request },
          timer: setImmediate(() => void flush().catch(() => {})),
        };
      },
      ensureWorkflow: async (request) =>
        (await proposal("workflow.ensure", { ...request })) as unknown as ChildWorkflowRef,
    },
    abort.signal,
    () => Date.now(),
  );
  const folded = deferred as DeferredSettle | null;
  if (folded) clearImmediate(folded.timer);
  else await settling.catch(() => {});
  if (abort.signal.reason instanceof ClaimLostStop) return;
  crashPoint("worker.reconcile.beforeFinish");
  await send("reconcile.finished", {
    outcome: outcome as unknown as JsonValue,
    ...(folded ? { settle: folded.payload as JsonValue } : {}),
  }).catch(
    (error) => {
      if (!(error instanceof ClaimLostStop)) {
        process.stderr.write(`Controller worker: reconcile result refused: ${error}\n`);
      }
    },
  );
}

interface DeferredSettle {
  payload: Record<string, JsonValue | undefined>;
  timer: NodeJS.Immediate;
}

/** Proposals with stable ids; replies come back by id, several may be in flight. */
function proposerFor(channel: WorkerChannel, launch: ControllerLaunch): Propose {
  let sequence = 0;
  return async (kind, fields, reconcileId) => {
    const payload: Record<string, JsonValue> = {};
    for (const [key, value] of Object.entries(fields)) {
      if (value !== undefined) payload[key] = value;
    }
    const message: Record<string, unknown> = {
      schema: CONTROLLER_LAUNCH_SCHEMA,
      kind,
      messageId: `${launch.workerEpoch}.${++sequence}`,
      workerEpoch: launch.workerEpoch,
      payload,
    };
    if (reconcileId !== undefined) message.reconcileId = reconcileId;
    crashPoint(`worker.${kind}.beforeSend`);
    const verdict = acceptedVerdict(
      kind,
      await channel.request(message as { messageId: string }),
    );
    crashPoint(`worker.${kind}.afterReply`);
    return verdict.result;
  };
}

type Loaded =
  | { ok: true; definition: Definition }
  | { ok: false; reason: "sourceChanged" | "loadFailed"; detail: string };

/**
 * Enters the project (the host starts the worker in the state directory, where its compile cache
 * is), hashes before importing (changed code never runs), then compares the loaded identity.
 */
async function loadPinned(launch: ControllerLaunch): Promise<Loaded> {
  try {
    process.chdir(launch.projectPath);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    return {
      ok: false,
      reason: "loadFailed",
      detail: `The controller's project directory cannot be entered (${
        typeof code === "string" ? code : "error"
      }): restore it, then apply the controller again`,
    };
  }
  const before = verifySourceIdentity(launch.source);
  if (!before.ok) {
    return { ok: false, reason: "sourceChanged", detail: describeSourceChanges(before.changed) };
  }
  const root = launch.source.root;
  if (root.kind !== "file") {
    return { ok: false, reason: "loadFailed", detail: "A controller source is a file" };
  }
  try {
    const { loadControllerFile } = await import("../controllers/load-controller.ts");
    const loaded = await loadControllerFile(root.path);
    const after = compareSourceIdentity(launch.source, loaded.source);
    if (!after.ok) {
      return { ok: false, reason: "sourceChanged", detail: describeSourceChanges(after.changed) };
    }
    if (loaded.definition.name !== launch.controllerName) {
      return { ok: false, reason: "sourceChanged", detail: "The controller name changed" };
    }
    return { ok: true, definition: loaded.definition };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return { ok: false, reason: "loadFailed", detail: message.slice(0, 1000) };
  }
}
