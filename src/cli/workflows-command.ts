/**
 * `pi-workflows workflows [--json] [--cwd DIR]`: what `start` can run by name in a project, with
 * the source of each (project, user, built-in) and what it overrides. Reads directory listings
 * only: no host, no workflow code.
 */
import { defaultAgentDir } from "../base/workflow-files.ts";
import { listStartableWorkflows, type WorkflowSourceTag } from "../base/startable-workflows.ts";
import { EXIT } from "./exit-codes.ts";
import { type CliIo, printJson } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";
import { projectDir } from "./project-dir.ts";

const TAGS: Record<WorkflowSourceTag, string> = {
  project: "project",
  user: "user",
  builtin: "built-in",
};

export function runWorkflowsCommand(
  command: Extract<CliCommand, { kind: "workflows" }>,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  // A --cwd that is not a directory is refused as start's is, not read as a project without
  // workflows (which listed only the built-ins).
  const cwd = projectDir(command.cwd);
  const workflows = listStartableWorkflows(cwd, defaultAgentDir(env));
  if (command.json) {
    printJson(io, { workflows });
    return Promise.resolve(EXIT.ok);
  }
  if (workflows.length === 0) {
    io.out("No workflows found: add .pi/workflows/<name>.workflow.ts");
    return Promise.resolve(EXIT.ok);
  }
  const width = Math.min(32, Math.max(...workflows.map((w) => w.name.length)));
  const lines = workflows.map((w) => {
    const hides = w.overrides.length > 0
      ? ` (overrides ${w.overrides.map((o) => TAGS[o]).join(", ")})`
      : "";
    return `${w.name.padEnd(width)}  ${TAGS[w.source].padEnd(8)}  ${w.detail}${hides}`;
  });
  io.out(lines.join("\n"));
  return Promise.resolve(EXIT.ok);
}
