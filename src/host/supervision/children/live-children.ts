/**
 * A kind's live children, kept the same way for every kind: added when spawned (or kept), removed
 * once retired (or handed on), and from here stopped one run's at a time (the run was cancelled)
 * or all (host shutdown).
 */
export interface LiveChild {
  /** The run it serves. */
  runId: string;
  /** Stops it (idempotent); resolves once it is retired. */
  stop(why: "runStopped" | "shutdown"): Promise<void>;
}

export interface LiveChildren {
  add(child: LiveChild): void;
  remove(child: LiveChild): void;
  count(): number;
  /** Stops the run's children and waits for them. */
  stopRun(runId: string): Promise<void>;
  /** Stops every child and waits for them (host shutdown). */
  stopAll(): Promise<void>;
}

export function createLiveChildren(): LiveChildren {
  const live = new Set<LiveChild>();
  const stop = async (children: LiveChild[], why: "runStopped" | "shutdown") => {
    await Promise.all(children.map((child) => child.stop(why)));
  };
  return {
    add: (child) => void live.add(child),
    remove: (child) => void live.delete(child),
    count: () => live.size,
    stopRun: (runId) => stop([...live].filter((child) => child.runId === runId), "runStopped"),
    stopAll: () => stop([...live], "shutdown"),
  };
}
