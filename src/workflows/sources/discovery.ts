/**
 * Finding workflows: project `.pi/workflows/`, then `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`,
 * then the built-in catalog. A file's command name is its stem (`deploy.workflow.ts` is
 * `deploy`). A reference with a slash or a workflow suffix is a path; `builtin:<id>` is a built-in.
 */
import { existsSync, readdirSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import {
  defaultAgentDir as agentDirOf,
  isFile,
  listWorkflowFiles,
  WORKFLOW_SUFFIXES,
  workflowDirs as dirsOf,
  workflowStem,
} from "../../base/workflow-files.ts";
import { WorkflowLoadError } from "../errors.ts";
import { BUILTIN_WORKFLOWS, findBuiltin } from "./builtin-catalog.ts";
import { closestName } from "./closest-name.ts";

export { WORKFLOW_SUFFIXES, workflowStem };

export interface SourceDirs {
  /** Project directory (its `.pi/workflows/` is searched first). */
  cwd: string;
  /** Pi agent directory; default `$PI_CODING_AGENT_DIR` or `~/.pi/agent`. */
  agentDir?: string;
}

export type WorkflowRef =
  | { kind: "file"; path: string }
  | { kind: "builtin"; id: string };

export interface DiscoveredWorkflow {
  name: string;
  origin: "project" | "user" | "builtin";
  ref: WorkflowRef;
}

export function defaultAgentDir(): string {
  return agentDirOf();
}

export function workflowDirs(dirs: SourceDirs): { origin: "project" | "user"; dir: string }[] {
  return dirsOf(dirs.cwd, dirs.agentDir);
}

/** Every visible workflow, earlier sources shadowing later ones with the same name. */
export function discoverWorkflows(dirs: SourceDirs): DiscoveredWorkflow[] {
  const out = new Map<string, DiscoveredWorkflow>();
  for (const file of listWorkflowFiles(dirs.cwd, dirs.agentDir)) {
    out.set(file.name, {
      name: file.name,
      origin: file.origin,
      ref: { kind: "file", path: file.path },
    });
  }
  for (const b of BUILTIN_WORKFLOWS) {
    if (!out.has(b.id)) {
      out.set(b.id, { name: b.id, origin: "builtin", ref: { kind: "builtin", id: b.id } });
    }
  }
  return [...out.values()];
}

/**
 * "Did you mean" for a workflow path that does not exist: the visible workflow its file name
 * names (`deploy.workflow.ts` typed outside `.pi/workflows/`) or nearly names, else the closest
 * file name in the directory it names.
 */
function nearPath(path: string, dirs: SourceDirs): string {
  const stem = workflowStem(basename(path));
  if (stem !== null) {
    const names = discoverWorkflows(dirs).map((w) => w.name);
    const name = names.includes(stem) ? stem : closestName(stem, names);
    if (name !== null) return `; did you mean the workflow ${name}?`;
  }
  let siblings: string[];
  try {
    siblings = readdirSync(dirname(path));
  } catch {
    return "";
  }
  // Compared without extensions: `depoly.ts` is one swap from `deploy.workflow.ts`.
  const bare = (file: string) => workflowStem(file) ?? file.replace(/\.(ts|mts|js|mjs)$/, "");
  const near = closestName(bare(basename(path)), siblings.map(bare));
  const file = near === null ? undefined : siblings.find((f) => bare(f) === near);
  return file ? `; did you mean ${join(dirname(path), file)}?` : "";
}

/** Resolves a name, `builtin:<id>` or path to one source; throws a WorkflowLoadError. */
export function resolveWorkflowRef(ref: string, dirs: SourceDirs): WorkflowRef {
  if (typeof ref !== "string" || ref.trim().length === 0) {
    throw new WorkflowLoadError("workflowNotFound", "Workflow reference is empty");
  }
  if (ref.startsWith("builtin:")) {
    const id = ref.slice("builtin:".length);
    if (!findBuiltin(id)) {
      const near = closestName(id, BUILTIN_WORKFLOWS.map((b) => b.id));
      throw new WorkflowLoadError(
        "workflowNotFound",
        `Built-in workflow not found: ${id}${
          near
            ? `; did you mean builtin:${near}?`
            : `; the built-ins are ${BUILTIN_WORKFLOWS.map((b) => b.id).join(", ")}`
        }`,
      );
    }
    return { kind: "builtin", id };
  }
  const looksLikePath = ref.includes("/") || ref.includes("\\") || workflowStem(ref) !== null ||
    /\.(ts|mts|js|mjs)$/.test(ref);
  if (looksLikePath) {
    const path = isAbsolute(ref) ? ref : resolve(dirs.cwd, ref);
    if (!existsSync(path)) {
      throw new WorkflowLoadError(
        "workflowNotFound",
        `Workflow file not found: ${path}${nearPath(path, dirs)}`,
        path,
      );
    }
    if (!isFile(path)) {
      throw new WorkflowLoadError("workflowNotFound", `Workflow path is not a file: ${path}`, path);
    }
    return { kind: "file", path: realpathSync.native(path) };
  }
  const visible = discoverWorkflows(dirs);
  const found = visible.find((w) => w.name === ref);
  if (!found) {
    const near = closestName(ref, visible.map((w) => w.name));
    throw new WorkflowLoadError(
      "workflowNotFound",
      `Workflow not found: ${ref}: looked in .pi/workflows/, the agent workflows directory and the built-ins` +
        (near ? `; did you mean ${near}?` : ""),
    );
  }
  return found.ref.kind === "file"
    ? { kind: "file", path: realpathSync.native(found.ref.path) }
    : found.ref;
}
