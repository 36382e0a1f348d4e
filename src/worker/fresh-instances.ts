/**
 * Fresh module instances of a run's workflow for its prepared process (prepared-child.ts). The
 * spec runs each generation in a process of its own, and each validation in a child of its own,
 * so module-level state in workflow code (a counter, a cache, a connection) never carries from
 * one to the next. A kept process keeps that rule by giving every generation and every
 * validation an instance nothing has run in yet: each is a new load session (module-hooks.ts:
 * new module instances of every workflow file), loaded ahead while the process waits, so a
 * handoff does not wait for a load.
 *
 * Two spares are kept ready: one for the submission's validation, one for the next epoch, which
 * follows an accepted verdict at once. A rejected verdict means another submission comes (a model
 * turn later): the pool fills again meanwhile. A take from an empty pool loads at once. A fill
 * loads only what was missing when it began (a take meanwhile counts), one load at a time, each
 * after a turn of the event loop: a validation request that arrives while spares load is read
 * between two loads, and no load it does not need lands on its verdict's path.
 *
 * Node keeps every module instance for the process's life, with whatever its top level built (a
 * table read from a file, a cache), so the loads are counted and the process's memory watched:
 * past `maxLoads`, or once its resident memory grew by `MAX_KEPT_GROWTH_BYTES` since its first
 * load, the process asks not to be kept again (`worker.exiting` `reusable: false`) and the host
 * starts a fresh one for the run's next step. A workflow whose modules hold megabytes thus never
 * reaches the worker's memory cap by being kept.
 */
export const SPARES = 2;
/**
 * Loads one process may make before it retires (each leaves its module instances behind): about
 * 127 handoffs (two loads each) between the cold steps of a new process. A load keeps ~9 KB of
 * heap for a one-file workflow (512 loads of the handoff bench's: +4.7 MB heap, +12 MB RSS) and
 * costs no more at the 512th than at the first.
 */
export const MAX_FRESH_LOADS = 256;
/**
 * Growth of resident memory after which a kept process retires whatever its loads: a quarter of
 * the default worker memory cap (`PI_WORKFLOWS_WORKER_MEMORY_MB`, 1,024 MiB).
 */
export const MAX_KEPT_GROWTH_BYTES = 256 * 1024 * 1024;

export interface FreshInstances<T> {
  /** An instance nothing has run in: a spare loaded ahead, or one loaded now. */
  take(): Promise<T>;
  /** An instance loaded now, past any spare (one loaded before a change may be stale). */
  loadNow(): Promise<T>;
  /** Loads spares (one after another, in the background) until `SPARES` are ready. */
  fill(): void;
  /** Whether this process loaded (or grew) enough that it should not be kept again. */
  spent(): boolean;
}

export function createFreshInstances<T>(
  load: () => Promise<T>,
  maxLoads = MAX_FRESH_LOADS,
  residentBytes: () => number = () => process.memoryUsage.rss(),
): FreshInstances<T> {
  const firstResident = residentBytes();
  const spares: Promise<T>[] = [];
  let loads = 0;
  let filling: Promise<void> | null = null;
  const loadOne = (): Promise<T> => {
    loads++;
    const loading = load();
    // A spare's failure is seen by the take that uses it, not as an unhandled rejection.
    loading.catch(() => {});
    return loading;
  };
  const fillLoop = async () => {
    // At most the loads missing now: a take meanwhile (a validation that came before its spare
    // was ready) counts as one, so no further load lands on that exchange's path.
    const first = loads;
    const missing = SPARES - spares.length;
    const more = () => spares.length < SPARES && loads - first < missing && loads < maxLoads;
    while (more()) {
      // A turn of the event loop first: a request that came during the last load is read (and
      // takes its instance) before the next load holds the loop; it may leave nothing to load.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!more()) break;
      const loading = loadOne();
      spares.push(loading);
      // One load at a time: a handoff that comes meanwhile shares the CPU with one load at most.
      await loading.catch(() => {});
    }
  };
  return {
    take() {
      return spares.shift() ?? loadOne();
    },
    loadNow: () => loadOne(),
    fill() {
      // A fill under way is not restarted: what an exchange took meanwhile waits for the next.
      filling ??= fillLoop().finally(() => (filling = null));
    },
    spent: () => loads >= maxLoads || residentBytes() - firstResident >= MAX_KEPT_GROWTH_BYTES,
  };
}
