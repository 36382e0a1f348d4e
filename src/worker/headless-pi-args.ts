/**
 * The command line of a headless Pi child. The spec gives the child only the step prompt, the
 * configured model arguments and the bridge; Pi would otherwise discover resources on its own
 * (the user's and the project's extensions, context files such as AGENTS.md, skills, prompt
 * templates, MCP servers, and the project's `.pi` settings when the project is trusted), so the
 * default turns each of them off with Pi's own flags. A run started with the project context
 * (`--project-context`) keeps Pi's context files and skills: project skills then load as Pi's
 * saved trust decision for the project says (pi-workflows never grants trust itself).
 *
 * Order: mode, session, what to load, the bridge, the recorded arguments (the user's `--`
 * arguments may add resources again with `-e`, `--skill`, ...), then a step's tool allowlist.
 */
import type { PiContext } from "../protocol/pi-launch.ts";
import { BRIDGE_TOOL } from "./pi-bridge-tool.ts";

/** Flags that keep every ambient resource out of the child (the default). */
export const NO_AMBIENT_FLAGS: readonly string[] = [
  "--no-extensions",
  "--no-context-files",
  "--no-skills",
  "--no-prompt-templates",
  "--no-themes",
  "--no-mcp",
  "--no-approve",
];

/** With the project context: context files and skills load; the rest stays off. */
export const PROJECT_CONTEXT_FLAGS: readonly string[] = [
  "--no-extensions",
  "--no-prompt-templates",
  "--no-themes",
  "--no-mcp",
];

export interface HeadlessPiArgsInput {
  /** `--session <file>` or `--fork <file> --session-dir <dir>`. */
  session: readonly string[];
  context: PiContext;
  bridgeFile: string;
  /** The model arguments recorded with the run. */
  recorded: readonly string[];
  /** A step's tool allowlist (agent group members, `agent({ tools })`). */
  tools?: readonly string[];
}

export function headlessPiArgs(input: HeadlessPiArgsInput): string[] {
  return [
    "--mode",
    "rpc",
    ...input.session,
    ...(input.context === "project" ? PROJECT_CONTEXT_FLAGS : NO_AMBIENT_FLAGS),
    "-e",
    input.bridgeFile,
    ...input.recorded,
    // An allowlist still needs the bridge's tool, or the step could not be submitted.
    ...(input.tools ? ["--tools", [...input.tools, BRIDGE_TOOL.name].join(",")] : []),
  ];
}
