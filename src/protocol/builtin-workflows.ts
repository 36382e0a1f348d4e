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
  { id: "echo", summary: "Returns its input unchanged" },
]);
