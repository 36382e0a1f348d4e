/**
 * How the extension starts the host from inside Pi: `pi-workflows host start`, the same command
 * the CLI runs, found relative to this module (the extension ships inside the package):
 * - `PI_WORKFLOWS_EXECUTABLE` names an executable to run instead (the single-file binary);
 * - installed under `node_modules` (`pi install npm:@osolmaz/pi-workflows`), the package's bin
 *   `bin/pi-workflows.mjs`, which runs the bundled CLI (Node refuses to strip types there);
 * - from a checkout (`pi install <dir>`), the CLI source `src/cli/main.ts` itself.
 * Both run on the Node that runs Pi, unless Pi runs on another runtime (its compiled binary): then
 * on `node` from PATH.
 */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface LaunchCommand {
  command: string;
  args: string[];
}

export function hostStartCommand(
  env: Record<string, string | undefined> = process.env,
  moduleUrl: string = import.meta.url,
): LaunchCommand {
  return cliCommand(["host", "run"], env, moduleUrl);
}

/** The command that runs `pi-workflows <args>` from this installation. */
export function cliCommand(
  args: string[],
  env: Record<string, string | undefined>,
  moduleUrl: string,
): LaunchCommand {
  const executable = env.PI_WORKFLOWS_EXECUTABLE;
  if (executable) return { command: executable, args };
  const here = fileURLToPath(moduleUrl);
  const root = resolve(dirname(here), "..", "..");
  const source = join(root, "src", "cli", "main.ts");
  const underNodeModules = /[\\/]node_modules[\\/]/.test(here);
  const entry = underNodeModules || !existsSync(source)
    ? join(root, "bin", "pi-workflows.mjs")
    : source;
  return { command: nodeCommand(), args: [entry, ...args] };
}

/** This process's Node, or `node` from PATH when Pi does not run on Node. */
function nodeCommand(): string {
  const versions = process.versions as Record<string, string | undefined>;
  if (versions.bun || "Deno" in globalThis) return "node";
  return process.execPath;
}
