/**
 * `autodoc`: records an already chosen plan in the project's docs, and nothing else. locate
 * (which docs hold this) -> inspect (what they lack) -> update (edit those docs only, no shell)
 * -> verify (git lists every changed path; a change outside the docs fails the run: autodoc
 * never implements). Output `{status: "documented", files, summary}`.
 */
import { agent, compute, shell } from "../nodes.ts";
import { defineWorkflow } from "../define-workflow.ts";
import { NodeFailure } from "../errors.ts";
import type { JsonValue } from "../../protocol/canonical-json.ts";
import {
  inputRecord,
  isRecord,
  optionalText,
  planInput,
  promptText,
  READ_ONLY_TOOLS,
  stringList,
} from "./builtin-input.ts";

export interface AutodocInput {
  plan: JsonValue;
  task: string | null;
}

const NAME = "autodoc";
/** Reading and editing files, no shell: the update step cannot run code. */
const EDIT_TOOLS = ["read", "grep", "find", "ls", "edit", "write"];

function readInput(raw: unknown): AutodocInput {
  const input = inputRecord(raw, NAME);
  // `/workflow autodoc <text>` passes the plan as the task text.
  const plan = planInput(input, NAME) ?? optionalText(input, "task", NAME);
  if (plan === null) {
    throw new Error(`${NAME}: "plan" is required: the chosen plan, as text or JSON`);
  }
  return { plan, task: input.plan === undefined ? null : optionalText(input, "task", NAME) };
}

function checkDocPath(path: string): void {
  if (path.startsWith("/") || path.split(/[\\/]/).includes("..")) {
    throw new Error(`"${path}" must be a path inside the project, relative to its root`);
  }
}

/** `git status --porcelain -z` entries: the paths a working tree changed (renames: the new). */
export function changedPaths(porcelain: string): string[] {
  const parts = porcelain.split("\0").filter((p) => p.length > 0);
  const out: string[] = [];
  for (let i = 0; i < parts.length; i++) {
    const code = parts[i].slice(0, 2);
    out.push(parts[i].slice(3));
    if (code.includes("R") || code.includes("C")) i++;
  }
  return out;
}

export const autodocWorkflow = defineWorkflow<AutodocInput>({
  name: NAME,
  contractId: "pi-workflows.autodoc.v1",
  title: ({ input }) => `Document: ${(input.task ?? promptText(input.plan, 80)).slice(0, 80)}`,
  input: readInput,
  startAt: "before",
  nodes: {
    // The tree as it was: only what changes from here on is autodoc's.
    before: shell({
      exec: () => ({
        command: "git",
        args: ["status", "--porcelain=v1", "-z", "-uall"],
        allowNonZeroExit: true,
      }),
      parse: (r) => {
        if (r.exitCode !== 0) {
          throw new NodeFailure(
            "notAGitRepository",
            `autodoc needs a git work tree: ${r.stderr.trim()}`,
          );
        }
        return { changed: changedPaths(r.stdout) };
      },
    }),
    locate: agent({
      statusDetail: "finding the docs",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input }) =>
        `This plan was chosen; it must be recorded in the project's documentation (not ` +
        `implemented).\n\nPlan:\n${promptText(input.plan)}\n\nFind the documentation files ` +
        "that should describe it (README, docs/, design notes, ADRs). Name existing files, or " +
        "new ones next to the existing docs. Paths relative to the project root. Change nothing.",
      expectedOutput: '{"files": ["docs/x.md"], "why": "..."}',
      validate: (output) => {
        if (!isRecord(output)) throw new Error('send {"files": ["docs/x.md"], "why": "..."}');
        const files = stringList(output.files, "files", 1);
        for (const f of files) checkDocPath(f);
        if (files.length > 20) throw new Error("at most 20 files");
      },
    }),
    inspect: agent({
      statusDetail: "reading the docs",
      tools: READ_ONLY_TOOLS,
      prompt: ({ input, outputs }) =>
        `Read these documentation files and list what each lacks to describe the plan ` +
        `accurately.\n\nFiles: ${outputs.locate.files.join(", ")}\n\nPlan:\n${
          promptText(input.plan)
        }\n\nChange nothing yet.`,
      expectedOutput: '{"gaps": [{"file": "docs/x.md", "missing": "..."}]}',
      validate: (output) => {
        const gaps = isRecord(output) ? output.gaps : undefined;
        if (!Array.isArray(gaps)) {
          throw new Error('send {"gaps": [{"file": "...", "missing": "..."}]}');
        }
      },
    }),
    update: agent({
      statusDetail: "updating the docs",
      tools: EDIT_TOOLS,
      prompt: ({ input, outputs }) =>
        `Update the documentation so it records the plan. Edit only these files: ${
          outputs.locate.files.join(", ")
        }. Do not change code, tests or configuration, and do not implement the plan.\n\n` +
        `Plan:\n${promptText(input.plan)}\n\nGaps found:\n${promptText(outputs.inspect.gaps)}`,
      expectedOutput: '{"changed": ["docs/x.md"], "summary": "..."}',
      validate: (output) => {
        if (!isRecord(output) || typeof output.summary !== "string") {
          throw new Error('send {"changed": ["docs/x.md"], "summary": "..."}');
        }
        stringList(output.changed, "changed");
      },
    }),
    after: shell({
      exec: () => ({ command: "git", args: ["status", "--porcelain=v1", "-z", "-uall"] }),
      parse: (r) => ({ changed: changedPaths(r.stdout) }),
    }),
    verify: compute({
      run: ({ outputs }) => {
        const before = new Set<string>(outputs.before.changed);
        const allowed = new Set<string>(outputs.locate.files);
        const touched = (outputs.after.changed as string[]).filter((p) => !before.has(p));
        const outside = touched.filter((p) => !allowed.has(p));
        if (outside.length > 0) {
          throw new NodeFailure(
            "changedOutsideDocs",
            `autodoc changed files outside the docs it named (${[...allowed].join(", ")}): ${
              outside.slice(0, 20).join(", ")
            }; review and revert them`,
          );
        }
        if (touched.length === 0) {
          throw new NodeFailure("docsUnchanged", "autodoc changed no documentation file");
        }
        return { status: "documented", files: touched, summary: outputs.update.summary };
      },
    }),
  },
  edges: [
    { from: "before", to: "locate" },
    { from: "locate", to: "inspect" },
    { from: "inspect", to: "update" },
    { from: "update", to: "after" },
    { from: "after", to: "verify" },
  ],
  exits: { documented: { from: "verify" } },
});
