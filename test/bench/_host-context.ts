/**
 * Shared by the benchmarks that drive the real supervision in-process: a state store in
 * `stateDir`, the host claim, and the `HostContext` the host main would build. Files starting
 * with `_` are helpers, not benchmarks (main.ts skips them).
 */
import type { HostContext } from "../../src/host/host-context.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim, type HostClaim, releaseHostClaim } from "../../src/state/host-claim.ts";
import { openStateStore, type StateStore } from "../../src/state/store.ts";
import {
  enqueueRun,
  type RunBindingInput,
  type TransitionResult,
} from "../../src/state/transitions/run-enqueue.ts";
import type { ResolveResult } from "../../src/protocol/resolve-messages.ts";
import { resolvedRunFields } from "../../src/host/resolved-run.ts";

export function benchHostContext(stateDir: string, workerStartupMs: number): HostContext {
  const store = openStateStore({ stateDir, clock: systemClock, ids: randomIds });
  const host = acquireHostClaim(store, { ownerId: "bench-host", token: "t", ttlMs: 600_000 });
  const ctx: HostContext = {
    store,
    clock: systemClock,
    ids: randomIds,
    stateDir,
    hostEpoch: host.epoch,
    hostOwnerId: "bench-host",
    log: () => {},
    options: {
      maxConcurrentWorkers: 1,
      claimTtlMs: 30_000,
      claimRenewMs: 10_000,
      workerStartupMs,
      killGraceMs: 1_000,
      maxCapturedOutputBytes: 1024 * 1024,
      boundaryMs: 30_000,
      stopWaitMs: 10_000,
      maxConcurrentResolvers: 2,
      maxWorkerMemoryMb: 1024,
      maxWorkerLogsMb: 64,
    },
  };
  claims.set(ctx, host);
  return ctx;
}

const claims = new WeakMap<HostContext, HostClaim>();

/** Gives up the bench's host claim, so a real host can start on the same state at once. */
export function releaseBenchHost(ctx: HostContext): void {
  const claim = claims.get(ctx);
  if (claim) releaseHostClaim(ctx.store, claim);
}

/**
 * Queues a run of a workflow the resolver already checked (`supervision.resolve` or a resolver
 * child), as `run.start` would after its resolver answered; headless unless `binding` says else.
 */
export function enqueueResolved(
  store: StateStore,
  resolved: ResolveResult,
  where: {
    projectPath: string;
    binding?: RunBindingInput;
    /** Provider credentials the run is started with (names; the host is given the values). */
    credentialNames?: string[];
  },
): TransitionResult {
  if (!resolved.ok) throw new Error(`Resolve failed: ${resolved.message}`);
  return enqueueRun(store, {
    ...resolvedRunFields(resolved, where.projectPath),
    binding: where.binding ?? { executionMode: "headless" },
    ...(where.credentialNames ? { environment: {}, credentialNames: where.credentialNames } : {}),
  });
}
