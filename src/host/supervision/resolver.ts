/**
 * The source resolver: `run.start` must validate a workflow reference and normalize its input,
 * which means running workflow code. The host never does that itself; it starts
 * `pi-workflows worker --resolve` (own process group, bounded output, same fd-3 framing), sends
 * one request, waits for one answer within the startup deadline, and stops the child.
 */
import type { JsonValue } from "../../protocol/canonical-json.ts";
import { writeFrame } from "../../protocol/framing.ts";
import { parseResolveResult, RESOLVE_REQUEST_SCHEMA } from "../../protocol/resolve-messages.ts";
import { isResolveProgress, type ResolveProgress } from "../../protocol/resolve-progress.ts";
import type { HostContext, ResolveRequest, ResolveResult } from "../host-context.ts";
import type { ProcessRegistry } from "./process-registry.ts";
import { describeResolveStep, exitWords, stuckHint } from "./resolver-steps.ts";
import { createSlots } from "./slots.ts";
import { type ChildCommand, spawnChild } from "./children/spawn-child.ts";
import { retireChild, stopChildGroup } from "./children/retire-child.ts";
import { type Heard, serveChildRequests } from "./children/child-requests.ts";

export interface ResolverOptions {
  /** Extra environment on top of the run's (tests). */
  env?: NodeJS.ProcessEnv;
  /** The command for `worker --resolve`; default `selfCommand`. */
  command?: ChildCommand;
  registry: ProcessRegistry;
}

export interface Resolvers {
  /** Resolves in a child once one of the few slots is free; refused while the host stops. */
  resolve(request: ResolveRequest): Promise<ResolveResult>;
  /** Resolutions running or queued for a slot: a waiting start keeps the host busy. */
  pending(): number;
}

export function createResolvers(
  ctx: HostContext,
  options: ResolverOptions & { stopping(): boolean },
): Resolvers {
  let pending = 0;
  // Each resolver is a whole runtime: a burst of starts queues for a few slots.
  const slots = createSlots(ctx.options.maxConcurrentResolvers);
  const { stopping, ...childOptions } = options;
  return {
    pending: () => pending,
    async resolve(request) {
      pending++;
      try {
        return await slots.run(() => {
          if (stopping()) {
            return Promise.resolve({
              ok: false,
              code: "hostStopping",
              message: "Workflow not resolved: the host is stopping; start the run again",
            });
          }
          return resolveInChild(ctx, request, childOptions);
        });
      } finally {
        pending--;
      }
    },
  };
}

async function resolveInChild(
  ctx: HostContext,
  request: ResolveRequest,
  options: ResolverOptions,
): Promise<ResolveResult> {
  const { env = {}, registry } = options;
  let overLimit = false;
  const spawned = spawnChild(ctx, {
    args: ["worker", "--resolve"],
    command: options.command,
    runEnvironment: request.env,
    extraEnv: env,
    logStem: ctx.ids.next("resolve"),
    onOutputExceeded: () => {
      overLimit = true;
      void stopChildGroup(spawned, { graceMs: 0, immediate: true });
    },
    register: { registry, kind: "resolver", runId: null },
  });
  let step: ResolveProgress | null = null;
  // Its one request, answered within the start-up deadline (which covers the start).
  const asked = serveChildRequests(spawned, readFrame)
    .expect("resolve", ctx.options.workerStartupMs, (progress) => (step = progress));
  try {
    await writeFrame(spawned.channel, {
      schema: RESOLVE_REQUEST_SCHEMA,
      workflow: request.workflow,
      input: (request.input ?? null) as JsonValue,
      cwd: request.cwd,
    });
    const answer = await asked;
    if (overLimit) return failure("workerCrashed", "the resolver's output passed its limit");
    if (!answer.ok) {
      const doing = describeResolveStep(step, request.workflow);
      if (answer.why === "timedOut") {
        return failure(
          "workerTimedOut",
          `${doing} did not finish within ${ctx.options.workerStartupMs} ms${stuckHint(step)}`,
        );
      }
      const exit = await Promise.race([spawned.exited, delay(1000)]);
      return failure("workerCrashed", `the resolver ${exitWords(exit)} while ${doing}`);
    }
    const parsed = parseResolveResult(answer.answer);
    if (!parsed.ok) return failure("protocolRejected", `malformed answer: ${parsed.error}`);
    const { schema: _schema, ...result } = parsed.value;
    return result as ResolveResult;
  } catch (error) {
    return failure("workerCrashed", error instanceof Error ? error.message : String(error));
  } finally {
    await retireChild(spawned, ctx.options.killGraceMs);
  }
}

/** The codec: progress frames, then the answer (parsed by the caller). */
function readFrame(value: unknown): Heard<unknown, ResolveProgress> {
  return isResolveProgress(value) ? { progress: value } : { answer: value };
}

function delay(ms: number): Promise<null> {
  return new Promise((resolve) => setTimeout(() => resolve(null), ms).unref());
}

function failure(code: string, detail: string): ResolveResult {
  return { ok: false, code, message: `Workflow not resolved: ${detail}` };
}
