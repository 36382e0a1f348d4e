/**
 * `pi-workflows worker`: the internal mode the host spawns for each run (and, with
 * `--resolve`, for the source resolver). The worker layer owns its behaviour; this file loads it
 * lazily and hands over the arguments.
 */
export async function runWorkerCommand(args: readonly string[]): Promise<number> {
  const { runWorker } = await import("../worker/main.ts");
  const code = await runWorker(args);
  // The worker is done: nothing it left open may keep the process alive.
  setTimeout(() => process.exit(code), 1000).unref();
  return code;
}
