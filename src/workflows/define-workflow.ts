/** `defineWorkflow`: checks the shape eagerly and brands the definition. */
import * as v from "valibot";
import { firstIssue, WorkflowSpecSchema } from "./definition-schema.ts";
import { WorkflowDefinitionError } from "./errors.ts";
import { DEFINITION_BRAND, type WorkflowDefinition, type WorkflowSpec } from "./types.ts";

export function defineWorkflow<I = unknown>(spec: WorkflowSpec<I>): WorkflowDefinition<I> {
  const label = typeof (spec as { name?: unknown })?.name === "string"
    ? ` "${(spec as { name: string }).name}"`
    : "";
  if (typeof spec !== "object" || spec === null) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      "Invalid workflow definition: expected an object passed to defineWorkflow",
    );
  }
  const parsed = v.safeParse(WorkflowSpecSchema, spec);
  if (!parsed.success) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid workflow definition${label}: ${firstIssue(parsed.issues)}`,
    );
  }
  const clash = Object.keys(spec.includes ?? {}).find((m) => m in spec.nodes);
  if (clash) {
    throw new WorkflowDefinitionError(
      "invalidDefinition",
      `Invalid workflow definition${label}: include mount "${clash}" has the same name as a node`,
    );
  }
  const def = { ...spec, [DEFINITION_BRAND]: true as const };
  return Object.freeze(def) as WorkflowDefinition<I>;
}

export function isWorkflowDefinition(value: unknown): value is WorkflowDefinition {
  return typeof value === "object" && value !== null &&
    (value as Record<symbol, unknown>)[DEFINITION_BRAND] === true;
}

/** A frozen name -> definition map; duplicate names are an error. */
export function defineWorkflowRegistry(
  defs: readonly WorkflowDefinition[],
): Readonly<Record<string, WorkflowDefinition>> {
  const out: Record<string, WorkflowDefinition> = {};
  for (const def of defs) {
    if (!isWorkflowDefinition(def)) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        "Invalid workflow registry: every entry must come from defineWorkflow",
      );
    }
    if (def.name in out) {
      throw new WorkflowDefinitionError(
        "invalidDefinition",
        `Invalid workflow registry: duplicate workflow name "${def.name}"`,
      );
    }
    out[def.name] = def;
  }
  return Object.freeze(out);
}
