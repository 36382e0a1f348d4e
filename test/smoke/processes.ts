/**
 * Process helpers for the smoke programs: run one CLI command with a deadline, and find the
 * processes a smoke started by scanning /proc for its private state directory in their
 * environment (every host, worker and shell child inherits it), so processes of other tests on
 * the same machine are never touched.
 */
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

export interface CommandResult {
  code: number | null;
  signal: string | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
}

/** Runs a command to its end; a command past its deadline is killed by PID with SIGKILL. */
export function runCommand(
  command: string,
  args: readonly string[],
  options: RunOptions,
): Promise<CommandResult> {
  return new Promise((resolve) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: options.env,
        timeout: options.timeoutMs,
        killSignal: "SIGKILL",
        encoding: "utf8",
        maxBuffer: 8 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        const failure = error as (Error & { code?: unknown; signal?: string | null }) | null;
        const code = failure === null ? 0 : typeof failure.code === "number" ? failure.code : null;
        resolve({ code, signal: failure?.signal ?? null, stdout, stderr });
      },
    );
  });
}

export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** `/proc/PID/stat` state letter; `Z` is a zombie (dead, not yet reaped). */
  state: string;
  exe: string | null;
  argv: string[];
}

/** Live processes whose environment carries `marker` (e.g. `PI_WORKFLOWS_STATE_DIR=/tmp/x`). */
export function processesWithEnv(marker: string): ProcessInfo[] {
  const found: ProcessInfo[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const info = readProcess(pid, marker);
    if (info !== null && info.state !== "Z") found.push(info);
  }
  return found;
}

function readProcess(pid: number, marker: string): ProcessInfo | null {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    if (!environ.includes(marker)) return null;
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name may contain spaces or parentheses: fields start after the last `)`.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter((a) => a !== "");
    let exe: string | null = null;
    try {
      exe = readlinkSync(`/proc/${pid}/exe`);
    } catch {
      exe = null;
    }
    return { pid, ppid: Number(fields[1]), state: fields[0], exe, argv };
  } catch {
    // The process ended while we read it, or it belongs to someone else.
    return null;
  }
}

/** Polls `probe` until it returns a value other than undefined, or fails at the deadline. */
export async function waitFor<T>(
  what: string,
  timeoutMs: number,
  probe: () => T | undefined | Promise<T | undefined>,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** SIGKILLs each listed process by PID; a process already gone is fine. */
export function killAll(processes: readonly ProcessInfo[]): void {
  for (const info of processes) {
    try {
      process.kill(info.pid, "SIGKILL");
    } catch {
      // Already gone.
    }
  }
}
