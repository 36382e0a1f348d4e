/**
 * The names and summaries of the built-in workflows, as static data: clients that must not load
 * the engine (the Pi extension's `/workflow` listing) read them here. The catalog in
 * `src/workflows/sources/builtin-catalog.ts` takes its ids and summaries from this list.
 */
export interface BuiltinWorkflowInfo {
  id: string;
  summary: string;
}

export const BUILTIN_WORKFLOW_INFO: readonly BuiltinWorkflowInfo[] = Object.freeze([
  { id: "autoplan", summary: "Frames a task, weighs options, writes a detailed plan" },
  {
    id: "plan-approval",
    summary: "Asks a person to continue, stop or replan (auto/required/skip)",
  },
  { id: "autodoc", summary: "Records a chosen plan in the project's docs; never implements" },
  { id: "sanity-check", summary: "Reviews the diff with parallel read-only reviewers; verdicts" },
  { id: "monitor", summary: "Checks on a schedule until a condition holds, acting when needed" },
  {
    id: "autoimplement",
    summary: "Plans or adopts a plan, implements, verifies, fixes and reviews (bounded)",
  },
  { id: "echo", summary: "Returns its input unchanged" },
]);
