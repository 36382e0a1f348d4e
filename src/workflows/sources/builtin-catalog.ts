/**
 * The small built-in catalog, addressed as `builtin:<id>` or by bare name when no project or
 * user file has that name. A revision changes whenever a built-in's behaviour changes, so a run
 * pinned to an older revision parks instead of running different code.
 */
import { defineWorkflow } from "../define-workflow.ts";
import { compute } from "../nodes.ts";
import type { WorkflowDefinition } from "../types.ts";

export interface BuiltinWorkflow {
  id: string;
  revision: string;
  summary: string;
  definition: WorkflowDefinition;
}

const echo = defineWorkflow({
  name: "echo",
  title: "Echo the input",
  startAt: "echo",
  nodes: {
    echo: compute({ run: ({ input }) => ({ input }), statusDetail: "echo" }),
  },
});

export const BUILTIN_WORKFLOWS: readonly BuiltinWorkflow[] = Object.freeze([
  { id: "echo", revision: "1", summary: "Returns its input unchanged", definition: echo },
]);

export function findBuiltin(id: string): BuiltinWorkflow | undefined {
  return BUILTIN_WORKFLOWS.find((b) => b.id === id);
}
