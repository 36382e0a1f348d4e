/**
 * Finding the user's Pi for headless runs, in the environment of whoever starts the run:
 *
 *   1. `PI_WORKFLOWS_PI` (a command name on PATH or a path),
 *   2. the `pi` entry of `config.json` in the state directory,
 *   3. `pi` on PATH.
 *
 * The first one named is used (a named command that is missing is an error, not a reason to
 * look further). The result is an absolute path and the version `<command> --version` prints,
 * checked once per Pi and runtime (pi-version-check.ts): a Pi that cannot start is refused
 * (`piBroken`), as is Pi older than MIN_PI_VERSION (known from its npm package without starting
 * it, when it is one). Every failure is one actionable line.
 */
import { accessSync, constants, readFileSync, realpathSync, statSync } from "node:fs";
import { delimiter, dirname, isAbsolute, join, resolve } from "node:path";
import { MIN_PI_VERSION } from "../protocol/pi-launch.ts";
import { parseUserConfig } from "../protocol/user-config.ts";
import { readUserConfigText } from "../os/user-config-file.ts";
import { checkedPiVersion, type VersionResult } from "./pi-version-check.ts";

export interface FoundPi {
  /** Absolute path of the executable. */
  command: string;
  version: string;
}

export type PiDiscovery =
  | { ok: true; pi: FoundPi }
  | { ok: false; code: "piNotFound" | "piTooOld" | "piBroken" | "invalidConfig"; message: string };

export const PI_INSTALL_HINT =
  "install Pi with `npm install -g @earendil-works/pi-coding-agent` or set PI_WORKFLOWS_PI to its path";

const PI_PACKAGES = ["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"];

export interface DiscoverPiOptions {
  env: NodeJS.ProcessEnv;
  /** Where `config.json` lives. */
  stateDir: string;
  /** Relative paths in PI_WORKFLOWS_PI resolve against this; default the process cwd. */
  cwd?: string;
}

export function discoverPi(options: DiscoverPiOptions): PiDiscovery {
  const { env } = options;
  let named: { source: string; command: string } | null = null;
  if (env.PI_WORKFLOWS_PI) named = { source: "PI_WORKFLOWS_PI", command: env.PI_WORKFLOWS_PI };
  else {
    const config = readPiConfig(options.stateDir);
    if (!config.ok) return config;
    if (config.pi !== undefined) {
      named = { source: "the pi entry of config.json in the state directory", command: config.pi };
    }
  }
  const wanted = named?.command ?? "pi";
  const command = locate(wanted, env.PATH ?? "", options.cwd ?? process.cwd());
  if (command === null) {
    const where = named
      ? `${named.source} names "${wanted.slice(0, 200)}", which is not an executable file`
      : "looked for PI_WORKFLOWS_PI, a pi entry in the state directory's config.json and pi on PATH";
    return { ok: false, code: "piNotFound", message: `Pi not found: ${where}; ${PI_INSTALL_HINT}` };
  }
  // The package says which Pi this is without starting it: one too old is refused at once.
  const packaged = packageVersion(command);
  if (packaged?.ok && compareVersions(packaged.version, MIN_PI_VERSION) < 0) {
    return tooOld(packaged.version, command);
  }
  // Whether it runs at all (on the Node its `#!` line finds) only Pi itself can say.
  const version = checkedPiVersion(
    command,
    env,
    options.stateDir,
    (name) => locate(name, env.PATH ?? "", options.cwd ?? process.cwd()),
  );
  if (!version.ok) {
    return {
      ok: false,
      code: "piBroken",
      message: `Pi at ${command} did not report its version (\`--version\` ${version.why}); ` +
        `Pi ${MIN_PI_VERSION}+ needs Node >= 22.19 on PATH: reinstall it or set PI_WORKFLOWS_PI ` +
        "to a working pi",
    };
  }
  if (compareVersions(version.version, MIN_PI_VERSION) < 0) return tooOld(version.version, command);
  return { ok: true, pi: { command, version: version.version } };
}

function tooOld(version: string, command: string): PiDiscovery {
  return {
    ok: false,
    code: "piTooOld",
    message:
      `Pi ${version} at ${command} is too old: headless runs need Pi >= ${MIN_PI_VERSION}; ` +
      "update it with `npm install -g @earendil-works/pi-coding-agent@latest`",
  };
}

/** `config.json` in the state directory; absent is an empty config. */
function readPiConfig(
  stateDir: string,
): { ok: true; pi?: string } | Extract<PiDiscovery, { ok: false }> {
  const read = parseUserConfig(readUserConfigText(stateDir));
  if (!read.ok) return { ok: false, code: "invalidConfig", message: read.message };
  return { ok: true, pi: read.config.pi };
}

/** An absolute path of an executable regular file, searching PATH for a bare name. */
function locate(command: string, path: string, cwd: string): string | null {
  if (command.includes("/")) {
    const file = isAbsolute(command) ? command : resolve(cwd, command);
    return isExecutableFile(file) ? file : null;
  }
  for (const dir of path.split(delimiter)) {
    if (dir === "" || !isAbsolute(dir)) continue;
    const file = join(dir, command);
    if (isExecutableFile(file)) return file;
  }
  return null;
}

function isExecutableFile(file: string): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The version of the Pi npm package `command` (a bin link) belongs to; null otherwise. */
function packageVersion(command: string): VersionResult | null {
  let dir: string;
  try {
    dir = dirname(realpathSync(command));
  } catch {
    return null;
  }
  for (let depth = 0; depth < 6; depth++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
      if (PI_PACKAGES.includes(pkg?.name) && typeof pkg.version === "string") {
        return { ok: true, version: pkg.version };
      }
      if (typeof pkg?.name === "string") return null; // another package: not Pi's layout
    } catch {
      // no package.json here: go up
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return null;
}

/** Numeric x.y.z comparison; pre-release suffixes are ignored. */
export function compareVersions(a: string, b: string): number {
  const parts = (s: string) => s.split(/[.+-]/).slice(0, 3).map((n) => Number.parseInt(n, 10) || 0);
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pa[i] - pb[i];
  return 0;
}
