/**
 * Removes a test's temp root once no process of it runs any more. The hosts a test starts and
 * their children (workers, resolvers, validation children, Pi) write into the root until they
 * exit: a worker writes Node's compile cache into the state directory as it exits, which it does
 * on its own soon after its host was SIGKILLed, and an rmSync racing that write fails with
 * ENOTEMPTY. So every process whose environment puts its state directory, compile cache or Pi
 * agent directory inside the root is SIGKILLed by PID (a killed process writes nothing more)
 * and waited for, bounded, before the removal. Processes of other tests are never touched.
 */
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { resolve } from "node:path";

/** The variables through which a process of ours names a directory it writes into. */
const DIR_VARIABLES = ["PI_WORKFLOWS_STATE_DIR", "NODE_COMPILE_CACHE", "PI_CODING_AGENT_DIR"];

/** Live (not zombie) processes whose environment places one of those directories in `root`. */
export function processesInside(root: string): number[] {
  const base = resolve(root);
  const inside = (value: string) => value === base || value.startsWith(`${base}/`);
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, "utf8").split("\0");
      const ours = environ.some((entry) => {
        const eq = entry.indexOf("=");
        return eq > 0 && DIR_VARIABLES.includes(entry.slice(0, eq)) && inside(entry.slice(eq + 1));
      });
      if (!ours) continue;
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      // A zombie has exited: it writes nothing more (its parent reaps it).
      if (stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z") {
        found.push(Number(name));
      }
    } catch {
      // Gone while we read it, or not ours to read.
    }
  }
  return found;
}

/** SIGKILLs every process of `root` and waits until none is alive (or fails at the deadline). */
export async function stopProcessesInside(root: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = processesInside(root);
    if (pids.length === 0) return;
    if (Date.now() > deadline) {
      throw new Error(`Processes of ${root} still alive ${timeoutMs} ms after SIGKILL: ${pids}`);
    }
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Already gone.
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Stops the processes of `root` (above), then removes it. */
export async function removeTempRoot(root: string, timeoutMs?: number): Promise<void> {
  // A test's own directory only: the temp dir itself would reach other tests' processes.
  const base = resolve(root);
  if (base === "/" || base === resolve(tmpdir()) || base === resolve(homedir())) {
    throw new Error(`Not a test's temp root: ${root}`);
  }
  await stopProcessesInside(root, timeoutMs);
  rmSync(root, { recursive: true, force: true });
}
