/**
 * The controller source resolver: a supervised `pi-workflows worker --resolve-controller` child
 * (own process group, bounded output) that loads controllers for `controller.apply`, so the host
 * never runs controller code. One child serves a series of requests and is kept for a short idle
 * period (applying many resources then costs one process start, not one each); it reloads a
 * controller whenever a file of its source changed. A request that is not answered within the
 * startup deadline stops the child.
 */
import { writeFrame } from "../../../protocol/framing.ts";
import {
  CONTROLLER_RESOLVE_REQUEST_SCHEMA,
  type ControllerResolveRequest,
  type ControllerResolveResult,
  parseControllerResolveResult,
} from "../../../protocol/controller-resolve.ts";
import type { HostContext } from "../../host-context.ts";
import type { ProcessRegistry } from "../process-registry.ts";
import { type ChildCommand, spawnChild, type SupervisedChild } from "../children/spawn-child.ts";
import { retireChild } from "../children/retire-child.ts";
import { type ChildRequests, type Heard, serveChildRequests } from "../children/child-requests.ts";

/** What `controller.apply` asks: a controller (a name or a path), the project, the spec. */
export type ControllerResolveInput = Pick<ControllerResolveRequest, "controller" | "cwd" | "spec">;

export type ControllerResolution =
  | Omit<Extract<ControllerResolveResult, { ok: true }>, "schema" | "requestId">
  | { ok: false; code: string; message: string };

export interface ResolverPoolDeps {
  command: ChildCommand;
  env: NodeJS.ProcessEnv;
  registry: ProcessRegistry;
  idleMs: number;
}

export interface ResolverPool {
  resolve(input: ControllerResolveInput): Promise<ControllerResolution>;
  /** Resolver children alive (0 or 1). */
  count(): number;
  shutdown(): Promise<void>;
}

interface Child {
  spawned: SupervisedChild;
  requests: ChildRequests<ControllerResolution, never>;
  gone: boolean;
  stopped: Promise<void>;
}

export function createResolverPool(ctx: HostContext, deps: ResolverPoolDeps): ResolverPool {
  let child: Child | null = null;
  let idleTimer: ReturnType<typeof setTimeout> | null = null;

  const stop = (c: Child): Promise<void> => {
    if (child === c) child = null;
    if (!c.gone) {
      c.gone = true;
      c.spawned.channel.destroy();
    }
    return c.stopped;
  };

  const startChild = (): Child => {
    const c = { gone: false } as Child;
    c.spawned = spawnChild(ctx, {
      args: ["worker", "--resolve-controller"],
      command: deps.command,
      extraEnv: deps.env,
      logStem: ctx.ids.next("cresolve"),
      onOutputExceeded: () => void stop(c),
      register: { registry: deps.registry, kind: "resolver", runId: null },
    });
    c.requests = serveChildRequests(c.spawned, readAnswer, () => {
      c.gone = true;
      if (child === c) child = null;
    });
    c.stopped = c.requests.ended.then(() => retireChild(c.spawned, ctx.options.killGraceMs));
    return c;
  };

  const armIdle = () => {
    if (idleTimer) clearTimeout(idleTimer);
    idleTimer = setTimeout(() => {
      idleTimer = null;
      if (child && child.requests.open() === 0) void stop(child);
    }, deps.idleMs);
    idleTimer.unref();
  };

  return {
    async resolve(input) {
      const c = child && !child.gone ? child : (child = startChild());
      const requestId = ctx.ids.next("cres");
      const asked = c.requests.expect(requestId, ctx.options.workerStartupMs);
      try {
        await writeFrame(c.spawned.channel, {
          schema: CONTROLLER_RESOLVE_REQUEST_SCHEMA,
          requestId,
          controller: input.controller,
          cwd: input.cwd,
          spec: input.spec,
        });
      } catch {
        // The child is gone: its reading ends and answers every open request.
      }
      const answer = await asked;
      armIdle();
      if (answer.ok) return answer.answer;
      if (answer.why === "ended") {
        return failure("workerCrashed", "the resolver stopped without an answer");
      }
      void stop(c);
      return failure("workerTimedOut", `no answer within ${ctx.options.workerStartupMs} ms`);
    },
    count: () => (child && !child.gone ? 1 : 0),
    async shutdown() {
      if (idleTimer) clearTimeout(idleTimer);
      if (child) await stop(child);
    },
  };
}

/** The codec: an answer names its request; anything else breaks the channel. */
function readAnswer(value: unknown): Heard<ControllerResolution, never> {
  const parsed = parseControllerResolveResult(value);
  if (!parsed.ok) return null;
  const { schema: _schema, requestId, ...answer } = parsed.value;
  return { requestId, answer: answer as ControllerResolution };
}

function failure(code: string, detail: string): ControllerResolution {
  return { ok: false, code, message: `Controller not resolved: ${detail}` };
}
