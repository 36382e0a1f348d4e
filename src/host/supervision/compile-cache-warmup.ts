/**
 * Warming Node's compile cache once the host is ready. Children start with the cache in the
 * state directory (child-environment.ts), but a new state directory's cache is empty, so the
 * first run's worker compiles the engine from source while the run waits (`npm run bench --
 * nodes`: `cold_first_node_ms`). When the cache is not known warm for this program, `start`
 * spawns one `worker --warm` child (src/worker/warm-cache.ts): it loads the modules a worker and
 * the source resolver load, writes the cache and exits. It runs no workflow code and holds no
 * claim.
 *
 * It never delays anything: the host calls `start` after it reported ready, `start` only spawns,
 * and nothing waits for the child except shutdown. It is skipped when the host has work to launch
 * (those children fill the cache); otherwise it runs at the lowest CPU priority, so a worker or
 * resolver launched meanwhile is scheduled before it. It is bounded: killed (its group, by exact
 * identity) at `warmupTimeoutMs` or at shutdown (killed from outside, Node writes no cache); a
 * host that dies leaves it to finish on its own, within about the time of a source resolver.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { setPriority } from "node:os";
import { join } from "node:path";
import { identifyChild, type ProcessIdentity } from "../../os/process-identity.ts";
import { baseRunEnvironment } from "../../protocol/run-environment.ts";
import { detectRuntime, type SelfCommand, selfCommand } from "../../os/self-launch.ts";
import { stopProcessGroup } from "../../os/stop-group.ts";
import { logError } from "../host-log.ts";
import type { HostContext } from "./api.ts";
import { childEnvironment, compileCacheEnv } from "./children/child-environment.ts";

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
  // Its identity is read without blocking the host (a `ps` run on macOS), as for every child.
  let running: { identified: Promise<ProcessIdentity | null>; ended: boolean } | null = null;
  let ending: WarmupEnd | null = null;
  const command = (options.workerCommand ?? selfCommand)(["worker", "--warm"]);
  // The environment a resolver gets: the host's allowlisted base, the cache, the extras.
  const base = baseRunEnvironment(process.env);
  const env = childEnvironment(base, {
    ...compileCacheEnv(ctx.stateDir, base),
    ...extraEnv,
  });
  const cacheDir = env.NODE_COMPILE_CACHE;
  const key = warmKey(command);

  const kill = async (why: WarmupEnd) => {
    if (!running || running.ended) return;
    const current = running;
    const identity = await current.identified;
    if (identity === null || current.ended) return;
    ending ??= why;
    await stopProcessGroup(identity, { graceMs: 0, immediate: true });
  };

  return {
    start(busy) {
      const skip = busy ? "hostBusy" : skipReason(cacheDir, key);
      if (skip !== null) {
        ctx.log("compile_cache.warmup_skipped", { reason: skip });
        return;
      }
      const started = Date.now();
      let child: ChildProcess;
      try {
        child = spawn(command.command, command.args, {
          cwd: ctx.stateDir,
          env,
          detached: true,
          // Nothing it could print is needed; its exit code says whether it warmed the cache.
          stdio: "ignore",
        });
      } catch (error) {
        ctx.log("compile_cache.warmup_failed", { error: logError(error) });
        return;
      }
      running = { identified: identifyChild(child).catch(() => null), ended: false };
      const current = running;
      try {
        if (child.pid !== undefined) setPriority(child.pid, LOWEST_PRIORITY);
      } catch {
        // Not permitted here: the child still runs, at normal priority.
      }
      const timer = setTimeout(
        () => void kill("timedOut"),
        options.warmupTimeoutMs ?? WARMUP_TIMEOUT_MS,
      );
      timer.unref();
      ctx.log("compile_cache.warming", { pid: child.pid ?? null });
      const finish = (code: number | null) => {
        if (current.ended) return;
        current.ended = true;
        clearTimeout(timer);
        const result: WarmupEnd = ending ?? (code === 0 ? "warmed" : "failed");
        if (result === "warmed") writeMarker(cacheDir!, key);
        ctx.log(`compile_cache.${result === "warmed" ? "warmed" : `warmup_${result}`}`, {
          ms: Date.now() - started,
          ...(result === "failed" ? { code } : {}),
        });
        settle();
      };
      child.once("exit", (code) => finish(code));
      child.once("error", () => finish(null));
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
