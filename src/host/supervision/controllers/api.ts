/**
 * What the controller source resolver is asked and answers (resolver-pool.ts): the host's
 * `controller.apply` handler and the controller scheduler see these shapes. No controller code
 * runs in the host.
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
