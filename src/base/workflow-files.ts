/**
 * Where workflow files live and how a file name becomes a workflow's command name: the naming
 * contract the engine's discovery and the Pi extension's `/workflow` listing share. Project
 * `.pi/workflows/` comes first, then `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`; the stem of
 * `deploy.workflow.ts` is `deploy`. Only directory listings here: nothing is loaded.
 */
import { readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const WORKFLOW_SUFFIXES = [".workflow.ts", ".workflow.mts", ".workflow.js", ".workflow.mjs"];

export type WorkflowFileOrigin = "project" | "user";

export interface WorkflowFile {
  name: string;
  origin: WorkflowFileOrigin;
  path: string;
}

/** `$PI_CODING_AGENT_DIR`, else `~/.pi/agent`. */
export function defaultAgentDir(env: Record<string, string | undefined> = process.env): string {
  return env.PI_CODING_AGENT_DIR || join(homedir(), ".pi", "agent");
}

export function workflowDirs(
  cwd: string,
  agentDir: string = defaultAgentDir(),
): { origin: WorkflowFileOrigin; dir: string }[] {
  return [
    { origin: "project", dir: join(cwd, ".pi", "workflows") },
    { origin: "user", dir: join(agentDir, "workflows") },
  ];
}

/** The stem of a workflow file name, or null when it has no workflow suffix. */
export function workflowStem(fileName: string): string | null {
  const suffix = WORKFLOW_SUFFIXES.find((s) => fileName.endsWith(s));
  return suffix ? fileName.slice(0, -suffix.length) : null;
}

/** Workflow files by name, sorted per directory; an earlier directory hides a later same name. */
export function listWorkflowFiles(cwd: string, agentDir?: string): WorkflowFile[] {
  return listSourceFiles(workflowDirs(cwd, agentDir), workflowStem);
}

/**
 * The files in `dirs` (in order) whose names `stemOf` accepts, by stem: an earlier directory
 * hides a later same name. Workflow and controller discovery share it.
 */
export function listSourceFiles(
  dirs: readonly { origin: WorkflowFileOrigin; dir: string }[],
  stemOf: (fileName: string) => string | null,
): WorkflowFile[] {
  const out = new Map<string, WorkflowFile>();
  for (const { origin, dir } of dirs) {
    for (const file of workflowFilesIn(dir, origin, stemOf)) {
      if (!out.has(file.name)) out.set(file.name, file);
    }
  }
  return [...out.values()];
}

/** The files of one directory `stemOf` accepts, sorted by file name (first of a stem wins). */
export function workflowFilesIn(
  dir: string,
  origin: WorkflowFileOrigin,
  stemOf: (fileName: string) => string | null = workflowStem,
): WorkflowFile[] {
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const out = new Map<string, WorkflowFile>();
  for (const file of names) {
    const name = stemOf(file);
    if (!name || out.has(name)) continue;
    const path = join(dir, file);
    if (isFile(path)) out.set(name, { name, origin, path });
  }
  return [...out.values()];
}

export function isFile(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}
