/**
 * How the extension starts the host from inside Pi: `pi-workflows host start`, the same command
 * the CLI runs, found relative to this module (the extension ships inside the package):
 * - `PI_WORKFLOWS_EXECUTABLE` names an executable to run instead (the single-file binary);
 * - installed under `node_modules` (`pi install npm:@osolmaz/pi-workflows`), the package's bin
 *   `bin/pi-workflows.mjs`, which runs the bundled CLI (Node refuses to strip types there);
 * - from a checkout (`pi install <dir>`), the CLI source `src/cli/main.ts` itself.
 * Both run on the Node that runs Pi when it is new enough (22.19, for `node:sqlite` and type
 * stripping), else on `node` from PATH when that one is. With neither, starting the host fails
 * with one line naming what to install. Nothing here is Linux-only: the same paths serve macOS.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export interface LaunchCommand {
  command: string;
  args: string[];
}

/** The oldest Node the host runs on (package.json `engines`). */
export const MIN_NODE_VERSION = "22.19.0";

export function hostStartCommand(
  env: Record<string, string | undefined> = process.env,
  moduleUrl: string = import.meta.url,
  probe: NodeProbe = probeNodeOnPath,
): LaunchCommand {
  return cliCommand(["host", "run"], env, moduleUrl, probe);
}

/** The command that runs `pi-workflows <args>` from this installation. */
export function cliCommand(
  args: string[],
  env: Record<string, string | undefined>,
  moduleUrl: string,
  probe: NodeProbe = probeNodeOnPath,
): LaunchCommand {
  const executable = env.PI_WORKFLOWS_EXECUTABLE;
  if (executable) {
    if (!isExecutable(executable)) {
      throw new Error(
        "PI_WORKFLOWS_EXECUTABLE names no executable file: install pi-workflows (install.sh) " +
          "or unset it to run the host on Node",
      );
    }
    return { command: executable, args };
  }
  const here = fileURLToPath(moduleUrl);
  const root = resolve(dirname(here), "..", "..");
  const source = join(root, "src", "cli", "main.ts");
  const underNodeModules = /[\\/]node_modules[\\/]/.test(here);
  const entry = underNodeModules || !existsSync(source)
    ? join(root, "bin", "pi-workflows.mjs")
    : source;
  return { command: nodeCommand(env, probe), args: [entry, ...args] };
}

/** The version `node --version` prints on `env`'s PATH (`v22.19.0`), or null with none. */
export type NodeProbe = (env: Record<string, string | undefined>) => string | null;

/**
 * This process's Node when it is new enough, else `node` from PATH when that one is; else a
 * one-line error naming what to install.
 */
function nodeCommand(env: Record<string, string | undefined>, probe: NodeProbe): string {
  const versions = process.versions as Record<string, string | undefined>;
  const own = versions.bun || "Deno" in globalThis ? null : process.versions.node;
  return pickNode(own, env, probe) ?? process.execPath;
}

/**
 * `"node"` (from PATH) or null (this process's own Node, version `own`; null when Pi does not
 * run on Node), whichever is new enough first; throws the one-line error when neither is.
 */
export function pickNode(
  own: string | null,
  env: Record<string, string | undefined>,
  probe: NodeProbe,
): "node" | null {
  if (own !== null && nodeVersionUsable(own)) return null;
  const onPath = probe(env);
  if (onPath !== null && nodeVersionUsable(onPath)) return "node";
  const pi = own !== null ? `Pi runs on Node ${own}` : "Pi does not run on Node";
  const path = onPath === null ? "there is no node on PATH" : `node on PATH is ${onPath}`;
  throw new Error(
    `The workflow host needs Node.js ${MIN_NODE_VERSION} or newer: ${pi} and ${path}; ` +
      "install Node.js 22.19+ (nodejs.org, or 'brew install node' on macOS) or set " +
      "PI_WORKFLOWS_EXECUTABLE to the pi-workflows executable",
  );
}

/** `22.19.0` or `v24.1.0` at least `MIN_NODE_VERSION`. */
export function nodeVersionUsable(version: string): boolean {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version.trim());
  if (!match) return false;
  const [major, minor] = [Number(match[1]), Number(match[2])];
  const [minMajor, minMinor] = MIN_NODE_VERSION.split(".").map(Number);
  return major > minMajor || major === minMajor && minor >= minMinor;
}

export function probeNodeOnPath(env: Record<string, string | undefined>): string | null {
  const result = spawnSync("node", ["--version"], {
    env: { PATH: env.PATH ?? "" },
    encoding: "utf8",
    timeout: 5_000,
  });
  if (result.error || result.status !== 0) return null;
  return result.stdout.trim().split("\n")[0] || null;
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}
