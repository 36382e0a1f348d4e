/**
 * A fixed number of slots for child processes of one kind (source resolvers): callers beyond
 * the limit wait in arrival order, so a burst of `run.start` requests spawns at most `limit`
 * resolvers at a time instead of one per request.
 */
export interface Slots {
  /** Runs `work` once a slot is free; the slot is freed when it settles. */
  run<T>(work: () => Promise<T>): Promise<T>;
}

export function createSlots(limit: number): Slots {
  let busy = 0;
  const queue: (() => void)[] = [];
  return {
    async run(work) {
      if (busy < limit) busy++;
      else await new Promise<void>((resolve) => queue.push(resolve));
      try {
        return await work();
      } finally {
        // Hand the slot straight to the next caller, or free it.
        const next = queue.shift();
        if (next) next();
        else busy--;
      }
    },
  };
}
