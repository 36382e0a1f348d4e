/**
 * The small built-in catalog, addressed as `builtin:<id>` or by bare name when no project or
 * user file has that name. A revision changes whenever a built-in's behaviour changes, so a run
 * pinned to an older revision parks instead of running different code.
 */
import type { WorkflowDefinition } from "../types.ts";
import { autodocWorkflow } from "../builtins/autodoc.ts";
import { autoimplementWorkflow } from "../builtins/autoimplement.ts";
import { autoplanWorkflow } from "../builtins/autoplan.ts";
import { echoWorkflow } from "../builtins/echo.ts";
import { monitorWorkflow } from "../builtins/monitor.ts";
import { planApprovalWorkflow } from "../builtins/plan-approval.ts";
import { sanityCheckWorkflow } from "../builtins/sanity-check.ts";
import { BUILTIN_WORKFLOW_INFO } from "../../base/builtin-workflows.ts";

export interface BuiltinWorkflow {
  id: string;
  revision: string;
  summary: string;
  definition: WorkflowDefinition;
}

const DEFINITIONS: Record<string, { revision: string; definition: WorkflowDefinition }> = {
  autoplan: { revision: "1", definition: autoplanWorkflow },
  "plan-approval": { revision: "1", definition: planApprovalWorkflow },
  autodoc: { revision: "1", definition: autodocWorkflow },
  "sanity-check": { revision: "1", definition: sanityCheckWorkflow },
  monitor: { revision: "1", definition: monitorWorkflow },
  autoimplement: { revision: "1", definition: autoimplementWorkflow },
  echo: { revision: "1", definition: echoWorkflow },
};

/** Every built-in: ids and summaries from the static list the Pi extension also reads. */
export const BUILTIN_WORKFLOWS: readonly BuiltinWorkflow[] = Object.freeze(
  BUILTIN_WORKFLOW_INFO.map((info) => {
    const built = DEFINITIONS[info.id];
    if (!built) throw new Error(`Built-in workflow ${info.id} has no definition`);
    return { id: info.id, summary: info.summary, ...built };
  }),
);

export function findBuiltin(id: string): BuiltinWorkflow | undefined {
  return BUILTIN_WORKFLOWS.find((b) => b.id === id);
}

/** The built-in whose definition object this is (a file imported it), if any. */
export function builtinOfDefinition(definition: WorkflowDefinition): BuiltinWorkflow | undefined {
  return BUILTIN_WORKFLOWS.find((b) => b.definition === definition);
}
