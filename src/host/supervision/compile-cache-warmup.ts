/**
 * Warming Node's compile cache once the host is ready. Children start with the cache in the
 * state directory (child-environment.ts), but a new state directory's cache is empty, so the
 * first run's worker compiles the engine from source while the run waits (`npm run bench --
 * nodes`: `cold_first_node_ms`). When the cache is not known warm for this program, `start`
 * spawns one `worker --warm` child (src/worker/warm-cache.ts): it loads the modules a worker and
 * the source resolver load, writes the cache and exits. It runs no workflow code and holds no
 * claim. The child kit spawns and retires it like every other child (own group, bounded output
 * files, removed when empty), at the lowest CPU priority; it is not in the process registry.
 *
 * It never delays anything: the host calls `start` after it reported ready, `start` only spawns,
 * and nothing waits for the child except shutdown. It is skipped when the host has work to launch
 * (those children fill the cache); otherwise it runs at the lowest CPU priority, so a worker or
 * resolver launched meanwhile is scheduled before it. It is bounded: killed (its group, by exact
 * identity) at `warmupTimeoutMs` or at shutdown (killed from outside, Node writes no cache); a
 * host that dies leaves it to finish on its own, within about the time of a source resolver.
 */
import { baseRunEnvironment } from "../../protocol/run-environment.ts";
import { type SelfCommand, selfCommand } from "../../os/self-launch.ts";
import { warmKey, warmupSkipReason, writeWarmMarker } from "../../os/compile-cache-marker.ts";
import { logError } from "../host-log.ts";
import type { HostContext } from "../host-context.ts";
import { childEnvironment, compileCacheEnv } from "./children/child-environment.ts";
import { retireChild, stopChildGroup } from "./children/retire-child.ts";
import { armChildDeadline } from "./children/child-deadline.ts";
import { spawnChild, type SupervisedChild } from "./children/spawn-child.ts";

/** A warm-up from source takes ~0.5 s on the 2-core development machine; far more is stuck. */
export const WARMUP_TIMEOUT_MS = 20_000;
/** The lowest priority (nice 19): the child gets only CPU time nothing else wants. */
const LOWEST_PRIORITY = 19;

type WarmupEnd = "warmed" | "failed" | "timedOut" | "stopped";

export interface CompileCacheWarmup {
  /**
   * Spawns the warm-up child when useful and returns at once; called once the host is ready.
   * `busy`: the host has runs or controllers to start now (their children fill the cache).
   */
  start(busy: boolean): void;
  /** Kills a running warm-up and waits for it (host shutdown). */
  stop(): Promise<void>;
}

/** The supervision extras the warm-up uses (as for workers and resolvers). */
export interface WarmupOptions {
  /** The command for `worker [args]` children; default `selfCommand`. */
  workerCommand?: (args: string[]) => SelfCommand;
  /** Default `WARMUP_TIMEOUT_MS`. */
  warmupTimeoutMs?: number;
}

/** `extraEnv`: the supervision's extra child environment, as resolvers get it. */
export function createCompileCacheWarmup(
  ctx: HostContext,
  options: WarmupOptions,
  extraEnv: NodeJS.ProcessEnv,
): CompileCacheWarmup {
  // `handled` settles once the child's end is handled (shutdown waits for that).
  let running: { spawned: SupervisedChild; ended: boolean; handled?: Promise<void> } | null = null;
  let ending: WarmupEnd | null = null;
  // The environment a resolver gets: the host's allowlisted base, the cache, the extras.
  const base = baseRunEnvironment(process.env);
  const cacheDir = childEnvironment(base, {
    ...compileCacheEnv(ctx.stateDir, base),
    ...extraEnv,
  }).NODE_COMPILE_CACHE;
  const key = warmKey((options.workerCommand ?? selfCommand)(["worker", "--warm"]));

  const kill = async (why: WarmupEnd) => {
    const current = running;
    if (!current || current.ended) return;
    const identity = await current.spawned.identified;
    if (identity === null || current.ended) return;
    ending ??= why;
    await stopChildGroup(current.spawned, { graceMs: 0, immediate: true });
  };

  return {
    start(busy) {
      const skip = busy ? "hostBusy" : warmupSkipReason(cacheDir, key);
      if (skip !== null) {
        ctx.log("compile_cache.warmup_skipped", { reason: skip });
        return;
      }
      const started = Date.now();
      let spawned: SupervisedChild;
      try {
        spawned = spawnChild(ctx, {
          args: ["worker", "--warm"],
          command: options.workerCommand,
          runEnvironment: base,
          extraEnv,
          logStem: ctx.ids.next("warm"),
          // Nothing it prints is needed (its exit code says whether it warmed the cache).
          onOutputExceeded: () => void kill("failed"),
          priority: LOWEST_PRIORITY,
        });
      } catch (error) {
        ctx.log("compile_cache.warmup_failed", { error: logError(error) });
        return;
      }
      const current: NonNullable<typeof running> = { spawned, ended: false };
      running = current;
      const deadline = armChildDeadline(
        spawned,
        options.warmupTimeoutMs ?? WARMUP_TIMEOUT_MS,
        () => void kill("timedOut"),
      );
      ctx.log("compile_cache.warming", { pid: spawned.child.pid ?? null });
      current.handled = spawned.exited.then(async ({ code }) => {
        current.ended = true;
        deadline.disarm();
        const result: WarmupEnd = ending ?? (code === 0 ? "warmed" : "failed");
        if (result === "warmed") writeWarmMarker(cacheDir!, key);
        ctx.log(`compile_cache.${result === "warmed" ? "warmed" : `warmup_${result}`}`, {
          ms: Date.now() - started,
          ...(result === "failed" ? { code } : {}),
        });
        await retireChild(spawned, 0);
      });
    },
    async stop() {
      await kill("stopped");
      await running?.handled;
    },
  };
}
