/**
 * Node writes its compile cache (`NODE_COMPILE_CACHE`, which the host sets for its children)
 * only when the process exits. A child the host keeps for a while (the controller resolver)
 * writes it as soon as it has loaded new modules, so a child started meanwhile (the controller
 * worker that the apply it just answered makes due) does not parse and type-strip them again.
 */
import * as nodeModule from "node:module";

export function flushCompileCache(): void {
  const flush = (nodeModule as { flushCompileCache?: () => void }).flushCompileCache;
  try {
    flush?.();
  } catch {
    // A cache that cannot be written only costs the next start its parsing.
  }
}
