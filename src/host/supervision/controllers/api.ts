/**
 * The controller half of the supervision, as the host's `controller.*` handlers see it. The
 * scheduler, controller workers and resolvers behind it run no controller code in the host.
 */
import type { JsonValue } from "../../../protocol/canonical-json.ts";
import type { ControllerResolveResult } from "../../../protocol/controller-resolve.ts";

export interface ControllerResolveInput {
  /** A controller name (discovered in the project) or a path to its file. */
  controller: string;
  /** Canonical project path. */
  cwd: string;
  spec: JsonValue;
}

export type ControllerResolution =
  | Omit<Extract<ControllerResolveResult, { ok: true }>, "schema" | "requestId">
  | { ok: false; code: string; message: string };

export interface ControllerSupervision {
  /** Loads the controller in a supervised resolver child and computes `initialStatus(spec)`. */
  resolve(input: ControllerResolveInput): Promise<ControllerResolution>;
  /** A resource became due (apply, reconcile, delete): schedule promptly. */
  wake(): void;
  activeWorkerCount(): number;
  /** Reconciles wanted now or later, in flight, or resolvers running. */
  hasPendingWork(): boolean;
}
