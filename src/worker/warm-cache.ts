/**
 * `worker --warm`: fills Node's compile cache (`NODE_COMPILE_CACHE`, set by the host) with the
 * modules a run's worker and the source resolver load after they start, then writes it and
 * exits (the host's compile-cache-warmup.ts starts it once for a new cache). Importing these
 * modules runs only their top-level declarations: no workflow file is loaded, nothing is
 * proposed, no channel is opened.
 */
import { flushCompileCache } from "./compile-cache.ts";

export async function warmCompileCache(): Promise<number> {
  // What the run mode and the resolver import lazily (main.ts, run-worker.ts): with these, the
  // workflow layer and the engine.
  await Promise.all([
    import("./run-worker.ts"),
    import("./receive-facts.ts"),
    import("./node-runner.ts"),
    import("./prepared-child.ts"),
    import("./speculative-step.ts"),
    import("./workflow-port.ts"),
    import("./resolve-source.ts"),
  ]);
  flushCompileCache();
  return 0;
}
