/**
 * Finding workflows: project `.pi/workflows/`, then `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`,
 * then the built-in catalog. A file's command name is its stem (`deploy.workflow.ts` is
 * `deploy`). A reference with a slash or a workflow suffix is a path; `builtin:<id>` is a built-in.
 */
import { existsSync, readdirSync, realpathSync, statSync } from "node:fs";
import { homedir } from "node:os";
import process from "node:process";
import { isAbsolute, join, resolve } from "node:path";
import { WorkflowLoadError } from "../errors.ts";
import { BUILTIN_WORKFLOWS, findBuiltin } from "./builtin-catalog.ts";

export const WORKFLOW_SUFFIXES = [".workflow.ts", ".workflow.mts", ".workflow.js", ".workflow.mjs"];

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
  return process.env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
}

export function workflowDirs(dirs: SourceDirs): { origin: "project" | "user"; dir: string }[] {
  return [
    { origin: "project", dir: join(dirs.cwd, ".pi", "workflows") },
    { origin: "user", dir: join(dirs.agentDir ?? defaultAgentDir(), "workflows") },
  ];
}

/** The stem of a workflow file name, or null when it has no workflow suffix. */
export function workflowStem(fileName: string): string | null {
  const suffix = WORKFLOW_SUFFIXES.find((s) => fileName.endsWith(s));
  return suffix ? fileName.slice(0, -suffix.length) : null;
}

/** Every visible workflow, earlier sources shadowing later ones with the same name. */
export function discoverWorkflows(dirs: SourceDirs): DiscoveredWorkflow[] {
  const out = new Map<string, DiscoveredWorkflow>();
  for (const { origin, dir } of workflowDirs(dirs)) {
    let names: string[] = [];
    try {
      names = readdirSync(dir).sort();
    } catch {
      continue;
    }
    for (const file of names) {
      const name = workflowStem(file);
      if (!name || out.has(name)) continue;
      const path = join(dir, file);
      if (!isFile(path)) continue;
      out.set(name, { name, origin, ref: { kind: "file", path } });
    }
  }
  for (const b of BUILTIN_WORKFLOWS) {
    if (!out.has(b.id)) {
      out.set(b.id, { name: b.id, origin: "builtin", ref: { kind: "builtin", id: b.id } });
    }
  }
  return [...out.values()];
}

/** Resolves a name, `builtin:<id>` or path to one source; throws a WorkflowLoadError. */
export function resolveWorkflowRef(ref: string, dirs: SourceDirs): WorkflowRef {
  if (typeof ref !== "string" || ref.trim().length === 0) {
    throw new WorkflowLoadError("workflowNotFound", "Workflow reference is empty");
  }
  if (ref.startsWith("builtin:")) {
    const id = ref.slice("builtin:".length);
    if (!findBuiltin(id)) {
      throw new WorkflowLoadError("workflowNotFound", `Built-in workflow not found: ${id}`);
    }
    return { kind: "builtin", id };
  }
  const looksLikePath = ref.includes("/") || ref.includes("\\") || workflowStem(ref) !== null ||
    /\.(ts|mts|js|mjs)$/.test(ref);
  if (looksLikePath) {
    const path = isAbsolute(ref) ? ref : resolve(dirs.cwd, ref);
    if (!existsSync(path)) {
      throw new WorkflowLoadError("workflowNotFound", `Workflow file not found: ${path}`, path);
    }
    if (!isFile(path)) {
      throw new WorkflowLoadError("workflowNotFound", `Workflow path is not a file: ${path}`, path);
    }
    return { kind: "file", path: realpathSync(path) };
  }
  const found = discoverWorkflows(dirs).find((w) => w.name === ref);
  if (!found) {
    throw new WorkflowLoadError(
      "workflowNotFound",
      `Workflow not found: ${ref}: looked in .pi/workflows/, the agent workflows directory and the built-ins`,
    );
  }
  return found.ref.kind === "file"
    ? { kind: "file", path: realpathSync(found.ref.path) }
    : found.ref;
}

function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
