/**
 * What can be started by name, from directory listings and the static built-in list only
 * (nothing is loaded): project files, then user files, then the built-ins. An earlier source
 * hides a later one of the same name; `overrides` says which sources a visible entry hides
 * (a built-in is still reachable as `builtin:<id>`). The CLI's `workflows` command and the Pi
 * extension's `/workflow` list both read this.
 */
import { BUILTIN_WORKFLOW_INFO } from "./builtin-workflows.ts";
import { workflowDirs, type WorkflowFileOrigin, workflowFilesIn } from "./workflow-files.ts";

export type WorkflowSourceTag = WorkflowFileOrigin | "builtin";

export interface StartableWorkflow {
  name: string;
  source: WorkflowSourceTag;
  /** The file's path, or the built-in's one-line summary. */
  detail: string;
  /** What `start` takes to name exactly this one (`builtin:<id>` for a built-in). */
  ref: string;
  /** Sources of the same name this entry hides, in precedence order. */
  overrides: WorkflowSourceTag[];
}

export function listStartableWorkflows(cwd: string, agentDir?: string): StartableWorkflow[] {
  const out = new Map<string, StartableWorkflow>();
  const add = (name: string, source: WorkflowSourceTag, detail: string, ref: string) => {
    const seen = out.get(name);
    if (seen) seen.overrides.push(source);
    else out.set(name, { name, source, detail, ref, overrides: [] });
  };
  for (const { origin, dir } of workflowDirs(cwd, agentDir)) {
    for (const file of workflowFilesIn(dir, origin)) add(file.name, origin, file.path, file.path);
  }
  for (const builtin of BUILTIN_WORKFLOW_INFO) {
    add(builtin.id, "builtin", builtin.summary, `builtin:${builtin.id}`);
  }
  return [...out.values()];
}
