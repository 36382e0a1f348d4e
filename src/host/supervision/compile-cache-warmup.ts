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
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { baseRunEnvironment } from "../../protocol/run-environment.ts";
import { detectRuntime, type SelfCommand, selfCommand } from "../../os/self-launch.ts";
import { logError } from "../host-log.ts";
import type { HostContext } from "./api.ts";
import { childEnvironment, compileCacheEnv } from "./children/child-environment.ts";
import { retireChild, stopChildGroup } from "./children/retire-child.ts";
import { armChildDeadline } from "./children/child-deadline.ts";
import { spawnChild, type SupervisedChild } from "./children/spawn-child.ts";

/** A warm-up from source takes ~0.5 s on the 2-core development machine; far more is stuck. */
export const WARMUP_TIMEOUT_MS = 20_000;
/** Names the program whose modules the cache holds (see `warmKey`). */
const MARKER = "warmed.json";
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
  // Settles once the child's end is handled (shutdown waits for that).
  let settle: () => void = () => {};
  const handled = new Promise<void>((resolve) => (settle = resolve));
  let running: { spawned: SupervisedChild; ended: boolean } | null = null;
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
      const skip = busy ? "hostBusy" : skipReason(cacheDir, key);
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
      const current: { spawned: SupervisedChild; ended: boolean } = { spawned, ended: false };
      running = current;
      const deadline = armChildDeadline(
        spawned,
        options.warmupTimeoutMs ?? WARMUP_TIMEOUT_MS,
        () => void kill("timedOut"),
      );
      ctx.log("compile_cache.warming", { pid: spawned.child.pid ?? null });
      void spawned.exited.then(async ({ code }) => {
        current.ended = true;
        deadline.disarm();
        const result: WarmupEnd = ending ?? (code === 0 ? "warmed" : "failed");
        if (result === "warmed") writeMarker(cacheDir!, key);
        ctx.log(`compile_cache.${result === "warmed" ? "warmed" : `warmup_${result}`}`, {
          ms: Date.now() - started,
          ...(result === "failed" ? { code } : {}),
        });
        await retireChild(spawned, 0);
        settle();
      });
    },
    async stop() {
      await kill("stopped");
      if (running && !running.ended) await handled;
    },
  };
}

/** Why a warm-up would be useless (a log code), or null when it is worth running. */
function skipReason(cacheDir: string | undefined, key: string): string | null {
  // The executable carries its own V8 code cache; Deno has no Node compile cache.
  if (detectRuntime() !== "node") return "noCompileCache";
  // A run environment's own NODE_COMPILE_CACHE, or none: not the state directory's.
  if (cacheDir === undefined) return "noCompileCache";
  try {
    if (readFileSync(join(cacheDir, MARKER), "utf8") === key) return "alreadyWarm";
  } catch {
    // No marker: a new cache (or one from before warm-ups).
  }
  return null;
}

/**
 * What the marker names: the Node version (the cache's own key) and the worker program, with
 * the size and time of its entry file, so an upgraded package or Node warms again. Edited
 * sources of a checkout are caught by the cache itself (it checks each file's bytes).
 */
function warmKey(command: SelfCommand): string {
  const files = command.args.filter((arg) => /\.(m?js|ts)$/.test(arg));
  const stamps = files.map((file) => {
    try {
      const stat = statSync(file);
      return `${file}:${stat.size}:${stat.mtimeMs}`;
    } catch {
      return file;
    }
  });
  return JSON.stringify({ node: process.version, command: command.command, files: stamps });
}

function writeMarker(cacheDir: string, key: string): void {
  try {
    mkdirSync(cacheDir, { recursive: true, mode: 0o700 });
    writeFileSync(join(cacheDir, MARKER), key, { mode: 0o600 });
  } catch {
    // Unwritable: the next host start warms again, which costs only that child.
  }
}
