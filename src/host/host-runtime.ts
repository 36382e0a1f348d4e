/**
 * What the command handlers see of the running host: the store, the epoch it holds, its
 * supervision and its lifecycle phase. One object per host process, built by host-main.ts.
 */
import type { Clock, IdSource } from "../base/clock.ts";
import type { StateStore } from "../state/store.ts";
import type { DeadlineTimer } from "./deadline-timer.ts";
import type { HostLog } from "./host-log.ts";
import type { ScheduleFirer } from "./schedule-firer.ts";
import type { RetentionRunner } from "./retention-runner.ts";
import type { SessionWatch } from "./session-watch.ts";
import type { Supervision } from "./host-supervision.ts";

export type HostPhase = "running" | "stopping";

export interface HostRuntime {
  readonly store: StateStore;
  readonly clock: Clock;
  readonly ids: IdSource;
  /** The host epoch this process holds; requests naming another epoch are rejected. */
  readonly epoch: number;
  /** Owner id of this host's claims (not a secret). */
  readonly ownerId: string;
  readonly supervision: Supervision;
  /** The one timer for deadlines of runs waiting without a worker. */
  readonly deadlines: DeadlineTimer;
  /** Fires schedules and holds their runs' credentials in memory. */
  readonly schedules: ScheduleFirer;
  /** Long polls of connected Pi sessions (woken by every commit). */
  readonly sessions: SessionWatch;
  readonly log: HostLog;
  /** Retention passes: `host.prune` and the idle pass (one at a time). */
  readonly retention: RetentionRunner;
  readonly version: string;
  phase(): HostPhase;
  /** True while this host still holds its epoch (renewing first when the lease is due). */
  holdsEpoch(): boolean;
  /** Whether the socket is listening and accepting connections. */
  socketAvailable(): boolean;
  /** Begins a graceful shutdown after the current answers are written. */
  requestStop(reason: string): void;
}
