/**
 * The built-in workflow definitions as the `@osolmaz/pi-workflows/builtins` module exports them:
 * `<camelCaseId>Workflow` for every catalog entry (`planApprovalWorkflow` for `plan-approval`).
 * A workflow file may re-export one as its default or include it by object; the loader then
 * pins the run to that built-in's revision like any included file.
 */
import type { WorkflowDefinition } from "../types.ts";
import { BUILTIN_WORKFLOWS } from "./builtin-catalog.ts";

export const BUILTINS_GLOBAL_KEY: unique symbol = Symbol.for("pi-workflows.builtins") as never;

/** `plan-approval` -> `planApprovalWorkflow`. */
export function builtinExportName(id: string): string {
  return `${id.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())}Workflow`;
}

let cached: Readonly<Record<string, WorkflowDefinition>> | null = null;

export function builtinsApi(): Readonly<Record<string, WorkflowDefinition>> {
  cached ??= Object.freeze(
    Object.fromEntries(BUILTIN_WORKFLOWS.map((b) => [builtinExportName(b.id), b.definition])),
  );
  return cached;
}
