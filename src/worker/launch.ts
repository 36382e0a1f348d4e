/** Reads the launch envelope, the first frame of every worker epoch. */
import { parseWorkerLaunch, type WorkerLaunch } from "../protocol/worker-launch.ts";

export type { WorkerLaunch };

/** The validated envelope; a clear one-line error when the host sent something else. */
export function parseLaunch(value: unknown): WorkerLaunch {
  const result = parseWorkerLaunch(value);
  if (!result.ok) throw new Error(`Worker launch rejected: ${result.error}`);
  return result.value;
}
