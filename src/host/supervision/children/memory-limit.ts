/**
 * The child kit's memory limit: the resident memory of the children a kind has watched, read for
 * all of them in one process-table read per sample (a slow `ps` skips samples instead of piling
 * up). A child over the cap is handed to the kind, which says what that means for its protocol
 * (a run worker's open attempt fails `memoryLimitExceeded` and the worker is stopped,
 * worker-limits.ts). Its output cap is the kit's too, held at the write (captured-output.ts).
 */
import { readResidentBytes } from "../../../os/process-memory.ts";
import type { ProcessIdentity } from "../../../os/process-identity.ts";

/** How often the resident memory of each watched child is read. */
export const MEMORY_CHECK_MS = 250;

export const MIB = 1024 * 1024;

/**
 * Returns one sample: each of `children()` that is `running` (nobody stops it) and identified
 * has its resident memory read; one still running past `capMb` goes to `over`.
 */
export function watchMemory<C extends { spawned: { identity: ProcessIdentity | null } }>(watch: {
  children(): Iterable<C>;
  running(child: C): boolean;
  capMb: number;
  over(child: C, bytes: number): void;
}): () => Promise<void> {
  let sampling = false;
  return async () => {
    if (sampling) return;
    sampling = true;
    try {
      const sampled = [...watch.children()].filter((c) =>
        c.spawned.identity !== null && watch.running(c)
      );
      const sizes = await readResidentBytes(sampled.map((c) => c.spawned.identity!));
      sampled.forEach((child, i) => {
        const bytes = sizes[i];
        // Still running by the time the read answered: a stop meanwhile has its own reason.
        if (bytes !== null && bytes > watch.capMb * MIB && watch.running(child)) {
          watch.over(child, bytes);
        }
      });
    } finally {
      sampling = false;
    }
  };
}
