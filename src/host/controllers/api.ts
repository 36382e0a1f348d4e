/**
 * The controller scheduler, as the host's `controller.*` handlers see it. It decides when each
 * resource reconciles; the controller workers and resolvers it uses are supervised processes
 * (src/host/supervision/controllers/) and run no controller code in the host.
 */
import type {
  ControllerResolution,
  ControllerResolveInput,
} from "../supervision/controllers/resolver-pool.ts";

export type { ControllerResolution, ControllerResolveInput };

export interface ControllerSupervision {
  /** Loads the controller in a supervised resolver child and computes `initialStatus(spec)`. */
  resolve(input: ControllerResolveInput): Promise<ControllerResolution>;
  /** A resource became due (apply, reconcile, delete): schedule promptly. */
  wake(): void;
  activeWorkerCount(): number;
  /** Reconciles wanted now or later, in flight, or resolvers running. */
  hasPendingWork(): boolean;
}
