/**
 * Refusals of controller transitions. Each names the outcome the host answers with and a stable
 * code, so the command layer maps every one with a single rule. Messages are one line and name
 * the controller and key, never a spec or status.
 */
import type { HostOutcome } from "../../protocol/host-response.ts";

export type ControllerRefusalOutcome = Exclude<HostOutcome, "accepted" | "adopted">;

export class ControllerRefusal extends Error {
  readonly outcome: ControllerRefusalOutcome;
  readonly code: string;
  /** The current resource version, for a compare-and-set conflict. */
  readonly revision: number | undefined;
  constructor(
    outcome: ControllerRefusalOutcome,
    code: string,
    message: string,
    revision?: number,
  ) {
    super(message);
    this.name = "ControllerRefusal";
    this.outcome = outcome;
    this.code = code;
    this.revision = revision;
  }
}

/** `<name>/<key>` as messages show a resource. */
export function resourceLabel(name: string, key: string): string {
  return `${name}/${key}`;
}

export function resourceNotFound(name: string, key: string): ControllerRefusal {
  return new ControllerRefusal(
    "notFound",
    "resourceNotFound",
    `Controller resource not found: ${
      resourceLabel(name, key)
    } (see 'pi-workflows controller list')`,
  );
}

export function controllerNotFound(name: string): ControllerRefusal {
  return new ControllerRefusal(
    "notFound",
    "controllerNotFound",
    `Controller not found in this project: ${name} (apply a resource of it first)`,
  );
}

/** A compare-and-set on `resourceVersion` failed; nothing changed. */
export function resourceVersionConflict(
  name: string,
  key: string,
  expected: number,
  actual: number,
): ControllerRefusal {
  return new ControllerRefusal(
    "conflict",
    "resourceVersionConflict",
    `Resource version conflict for ${
      resourceLabel(name, key)
    }: expected ${expected}, found ${actual}; read it again and retry`,
    actual,
  );
}
