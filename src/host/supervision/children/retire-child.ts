/**
 * The child kit's end, in one order for every kind: close the channel, stop the group (SIGTERM,
 * a bounded wait, SIGKILL of the group, by exact identity), take the child out of the process
 * registry once the group is gone, wait for the exit, let the last output drain from the pipes,
 * close them and remove empty log files.
 */
import type { ProcessIdentity } from "../../../os/process-identity.ts";
import {
  type StopGroupOptions,
  type StopGroupResult,
  stopProcessGroup,
} from "../../../os/stop-group.ts";
import { removeEmptyLogs } from "./captured-output.ts";
import type { SupervisedChild } from "./spawn-child.ts";

/** How long a child's last output may take to leave its pipes after it exited. */
export const OUTPUT_DRAIN_MS = 1_000;

/**
 * Stops the child's group (SIGKILL after `graceMs`; at once with `immediate`) once its identity
 * is known; nothing when it died before it could be identified. Resolves once the group is gone.
 */
export async function stopChildGroup(
  spawned: SupervisedChild,
  options: StopGroupOptions,
): Promise<StopGroupResult> {
  const identity = await spawned.identified;
  return identity === null ? "alreadyGone" : await stopProcessGroup(identity, options);
}

/**
 * Ends a child the host is done with (see the file comment). `forget` runs once the stop is over
 * (the group gone, or given up on), before the output is drained: the groups a worker registered.
 */
export async function retireChild(
  spawned: SupervisedChild,
  graceMs: number,
  forget?: (identity: ProcessIdentity) => unknown,
): Promise<void> {
  spawned.channel.destroy();
  const identity = await spawned.identified;
  if (identity) {
    // Alive after SIGKILL: its entry (and host_children row) stays for shutdown or the next host.
    const stopped = await stopProcessGroup(identity, { graceMs });
    if (stopped !== "stuck") spawned.registered?.unregister(identity);
    await forget?.(identity);
  }
  await spawned.exited;
  await closeAfterDrain(spawned, OUTPUT_DRAIN_MS);
  removeEmptyLogs(spawned.logFiles);
}

/**
 * After the child exited: lets its output pipes end on their own for up to `ms` (the last lines
 * may still be in the pipe), then closes them, so a descendant that inherited them cannot keep
 * them, and the host's reading, alive. Resolves once the files are closed.
 */
export async function closeAfterDrain(spawned: SupervisedChild, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    spawned.captured,
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
      timer.unref();
    }),
  ]);
  clearTimeout(timer);
  spawned.child.stdout?.destroy();
  spawned.child.stderr?.destroy();
  await spawned.captured;
}
