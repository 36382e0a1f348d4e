/**
 * `<pi> --version`, run once per Pi and runtime: a Pi whose package says 1.6.3 may still not
 * start (installed for a newer Node than the one its `#!/usr/bin/env node` finds on PATH), so
 * the version a run relies on is the one Pi itself prints. The answer is remembered in the
 * state directory (`pi-checked.json`) under a key made of the command's real path, size and
 * mtime and those of the interpreter its `#!` line names (`env node` looked up on PATH): a new
 * Pi, a new Node or another PATH checks again. Only successes are remembered.
 */
import { spawnSync } from "node:child_process";
import { closeSync, openSync, readFileSync, readSync, realpathSync, statSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { join } from "node:path";

export type VersionResult = { ok: true; version: string } | { ok: false; why: string };

const CHECK_FILE = "pi-checked.json";
const VERSION_TIMEOUT_MS = 15_000;
/** Remembered checks (Pi paths times runtimes); the oldest go first. */
const MAX_REMEMBERED = 16;

export function checkedPiVersion(
  command: string,
  env: NodeJS.ProcessEnv,
  stateDir: string,
  locate: (name: string) => string | null,
): VersionResult {
  const key = runtimeKey(command, locate);
  const file = join(stateDir, CHECK_FILE);
  const remembered = readRemembered(file);
  const known = key === null ? undefined : remembered[key];
  if (known !== undefined) return { ok: true, version: known };
  const reported = reportedVersion(command, env);
  if (reported.ok && key !== null) {
    const kept = Object.entries(remembered).slice(-(MAX_REMEMBERED - 1));
    try {
      writeFileSync(file, JSON.stringify(Object.fromEntries([...kept, [key, reported.version]])), {
        mode: 0o600,
      });
    } catch {
      // A state directory that cannot take it: the check runs again next time.
    }
  }
  return reported;
}

/** The identity of the command and of the interpreter it runs on; null when unreadable. */
function runtimeKey(command: string, locate: (name: string) => string | null): string | null {
  const id = (path: string) => {
    const real = realpathSync(path);
    const stat = statSync(real);
    return `${real}:${stat.size}:${stat.mtimeMs}`;
  };
  try {
    const interpreter = shebang(realpathSync(command));
    let runtime = "";
    if (interpreter) {
      const [program, ...args] = interpreter.split(/\s+/);
      // `#!/usr/bin/env node`: the node PATH finds is the runtime.
      const named = program.endsWith("/env") ? args.find((a) => !a.startsWith("-")) : undefined;
      const path = named ? locate(named) : program;
      runtime = path ? id(path) : `missing ${named ?? program}`;
    }
    return `${id(command)}|${runtime}`;
  } catch {
    return null;
  }
}

/** The `#!` line of a script, without the `#!`; null for a binary. */
function shebang(file: string): string | null {
  const fd = openSync(file, "r");
  try {
    const head = Buffer.alloc(256);
    const n = readSync(fd, head, 0, head.length, 0);
    const text = head.subarray(0, n).toString("utf8");
    return text.startsWith("#!") ? text.slice(2).split("\n")[0].trim() : null;
  } finally {
    closeSync(fd);
  }
}

function readRemembered(file: string): Record<string, string> {
  try {
    const value = JSON.parse(readFileSync(file, "utf8"));
    if (typeof value !== "object" || value === null || Array.isArray(value)) return {};
    return Object.fromEntries(
      Object.entries(value).filter((e): e is [string, string] => typeof e[1] === "string"),
    );
  } catch {
    return {};
  }
}

/**
 * `<command> --version`: the first x.y.z it prints, or why there is none.
 *
 * Synchronous on purpose. Its callers are the CLI before it asks the host anything, and a run
 * worker inside an agent group's first member step (workflow-port.ts), where blocking up to
 * VERSION_TIMEOUT_MS costs nothing the host promises: the host renews the worker's claim from its
 * own timer (heartbeats are a courtesy), sees the worker live by its process, and enforces the
 * attempt's deadline itself. A pause or cancel is committed first and the worker's claim
 * released, then the worker's process group gets SIGTERM, which `pi --version` (in that group)
 * gets too, so this returns and the worker leaves at once (SIGKILL after the kill grace
 * regardless); the command's answer follows the worker's exit (run-control.ts awaits stopRun), so
 * a blocked check delays it by no more than that. Only the worker's own messages (updates,
 * output) wait.
 */
export function reportedVersion(command: string, env: NodeJS.ProcessEnv): VersionResult {
  const result = spawnSync(command, ["--version"], {
    env,
    encoding: "utf8",
    timeout: VERSION_TIMEOUT_MS,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const version = /\b(\d+\.\d+\.\d+)\b/.exec(result.stdout ?? "")?.[1];
  if (result.status === 0 && version) return { ok: true, version };
  const code = (result.error as { code?: string } | undefined)?.code;
  const firstLine = (result.stderr ?? "").split("\n").find((line) => line.trim() !== "");
  const why = code === "ETIMEDOUT"
    ? `took longer than ${VERSION_TIMEOUT_MS / 1000} s`
    : code
    ? `failed: ${code}`
    : result.status === 0
    ? "printed no version"
    : `exited ${result.signal ?? result.status}${
      firstLine ? `: ${firstLine.trim().slice(0, 200)}` : ""
    }`;
  return { ok: false, why };
}
