/**
 * Reads the launch envelope, the first frame of every worker epoch, and takes the secrets the
 * user named for the run (`runSecrets`, from the host's memory) into this process's environment,
 * where the run's workflow code, shell and action nodes and Pi children find them. Provider
 * credentials discovered from the user's environment (`credentials`) stay for Pi alone.
 */
import { parseWorkerLaunch, type WorkerLaunch } from "../protocol/worker-launch.ts";

export type { WorkerLaunch };

/** The validated envelope; a clear one-line error when the host sent something else. */
export function parseLaunch(value: unknown): WorkerLaunch {
  const result = parseWorkerLaunch(value);
  if (!result.ok) throw new Error(`Worker launch rejected: ${result.error}`);
  Object.assign(process.env, result.value.runSecrets);
  return result.value;
}
