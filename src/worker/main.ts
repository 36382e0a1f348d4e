/**
 * `pi-workflows worker [mode]`: the internal modes the host spawns. All talk to the host
 * only over fd 3; stdout and stderr go to bounded files the host keeps in the state directory.
 *
 *   worker            one epoch of one run (run-worker.ts); kept by the host after an epoch
 *                     that parked on an interactive request, it validates that run's
 *                     submissions and runs its next epochs (prepared-child.ts)
 *   worker --resolve  load a workflow reference and normalize an input for `run.start`, so the
 *                     host never loads workflow code itself (resolve-source.ts)
 *   worker --validate check one interactive submission with the node's rules
 *                     (validate-submission.ts)
 *   worker --controller
 *                     one controller at its pinned source: runs the reconciles the host assigns
 *                     (controller-worker.ts)
 *   worker --resolve-controller
 *                     load controllers and compute initial statuses for `controller.apply`
 *                     (controller-resolver.ts)
 *   worker --warm     load the modules the other modes load into Node's compile cache and
 *                     exit, once for a new state directory (warm-cache.ts)
 *
 * The process exits when its work is done, when the host answers `claimLost`, and as soon as
 * the channel closes (the host is gone: nobody could commit anything it proposed).
 */
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { createWorkerChannel, hostChannel, type HostFd } from "./channel.ts";
import { settleCleanups, stopKeptChildren } from "./child-cleanups.ts";
import { WORKER_EXIT } from "./exit-codes.ts";

export { WORKER_EXIT };

/** How long a stopped worker may take to stop its children (the host's kill grace is 2 s). */
const LEAVE_BOUND_MS = 1_500;

const USAGE = "Usage: pi-workflows worker [--resolve | --validate | --controller | " +
  "--resolve-controller | --warm] (internal: started by the workflow host)";
const MODES = new Set([
  "--resolve",
  "--validate",
  "--controller",
  "--resolve-controller",
  "--warm",
]);

/**
 * Runs the worker mode named by `args`; resolves with the process exit code. `openChannel` is
 * fd 3; tests that record the frames on the wire pass their own tap around it.
 */
export async function runWorker(
  args: readonly string[] = [],
  openChannel: () => Duplex | HostFd = hostChannel,
): Promise<number> {
  forgetCompileCache();
  const unknown = args.find((arg) => !MODES.has(arg));
  if (unknown !== undefined || args.length > 1) {
    process.stderr.write(
      `Unknown worker argument: ${(unknown ?? args[1]).slice(0, 100)}\n${USAGE}\n`,
    );
    return WORKER_EXIT.usage;
  }
  const mode = args[0] ?? null;
  // No channel: the warm-up talks to nobody.
  if (mode === "--warm") return await (await import("./warm-cache.ts")).warmCompileCache();
  const oneShot = mode === "--resolve" || mode === "--validate";
  // Controller modes and the run mode receive frames the host sends on its own (controller
  // assignments and requests; a prepared run process's next job, prepared-child.ts); they are
  // kept until the mode, loaded lazily, subscribes or asks for the next one.
  const pushes: unknown[] = [];
  let onPush: ((value: unknown) => void) | null = null;
  const subscribe = (handler: (value: unknown) => void) => {
    onPush = handler;
    for (const value of pushes.splice(0)) handler(value);
  };
  const nextPush = (): Promise<unknown> => {
    if (pushes.length > 0) return Promise.resolve(pushes.shift());
    return new Promise((resolve) => {
      onPush = (value) => {
        onPush = null;
        resolve(value);
      };
    });
  };
  let channel;
  try {
    channel = createWorkerChannel(
      openChannel(),
      oneShot ? {} : { onPush: (value) => (onPush ? onPush(value) : pushes.push(value)) },
    );
  } catch (error) {
    process.stderr.write(`${error instanceof Error ? error.message : error}\n`);
    return WORKER_EXIT.usage;
  }
  let finishing = false;
  /**
   * Abort the running node (a shell node then stops its own process group, a headless Pi its
   * group) and leave once those groups are down, within a bound below the host's kill grace.
   */
  const leave = async (code: number, reason: string) => {
    setTimeout(() => process.exit(code), LEAVE_BOUND_MS).unref();
    const { abortActiveNode } = await import("./node-runner.ts");
    // A shell node's runner stops its command group within this; a headless Pi's stop is
    // tracked. Between nodes (a prepared process waiting for its next job) nothing runs.
    if (abortActiveNode(new DOMException(reason, "AbortError"))) {
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    stopKeptChildren();
    await settleCleanups(LEAVE_BOUND_MS - 500);
    process.exit(code);
  };
  // The host closed the channel: nobody can commit anything any more; stop mid-node too.
  channel.closed.then((reason) => {
    if (finishing) return;
    process.stderr.write(`${reason}\n`);
    void leave(WORKER_EXIT.channelClosed, reason);
  });
  process.once("SIGTERM", () => {
    void leave(WORKER_EXIT.failed, "The worker was stopped by the host");
  });
  try {
    // Modes load lazily: the run mode says ready before it imports the workflow layer.
    const code = args[0] === "--resolve"
      ? await (await import("./resolve-source.ts")).resolveSource(channel)
      : args[0] === "--validate"
      ? await (await import("./validate-submission.ts")).validateSubmission(channel)
      : mode === "--controller"
      ? await (await import("./controller-worker.ts")).runControllerWorker(channel, subscribe)
      : mode === "--resolve-controller"
      ? await (await import("./controller-resolver.ts")).serveControllerResolves(
        channel,
        subscribe,
      )
      : await (await import("./run-worker.ts")).runWorkerEpoch(channel, nextPush);
    finishing = true;
    channel.close();
    return code;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    process.stderr.write(`Worker failed: ${message.slice(0, 2000)}\n`);
    finishing = true;
    channel.close();
    return WORKER_EXIT.failed;
  }
}

/**
 * The host starts its children with Node's compile cache in the state directory (their start
 * directory; see compileCacheEnv in the host's children/child-environment.ts). Node has read it by now:
 * drop it so shell commands and Pi children of this worker do not inherit it.
 */
function forgetCompileCache(): void {
  if (process.env.NODE_COMPILE_CACHE === join(process.cwd(), "compile-cache")) {
    delete process.env.NODE_COMPILE_CACHE;
  }
}
