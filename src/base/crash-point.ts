/**
 * Test hook for crash tests, shared by the host and worker processes (it lives on the ground
 * floor, base/, so both may import it): `PI_WORKFLOWS_CRASH_AT=<point>` makes this process SIGKILL itself
 * when it reaches the named durable boundary (e.g. `worker.node.finished.afterSend`,
 * `host.node.finished.afterCommit`). With `PI_WORKFLOWS_CRASH_ONCE=<file>` it crashes only if it
 * can create that file first, so the restarted host or relaunched worker (same environment) runs
 * through. `PI_WORKFLOWS_CRASH_TRACE=<file>` instead records every point this process reaches, as
 * `<point>#<n>` lines, so the test kit (src/testing) can crash a run at each boundary an
 * uninterrupted run passes. Unset in production: two env reads per process.
 */
import { appendFileSync, closeSync, openSync } from "node:fs";

const reached = new Map<string, number>();
let target: string | undefined;
let trace: string | undefined;

/**
 * `PI_WORKFLOWS_CRASH_AT=<point>` or `<point>#<n>`: crash the n-th time (default the first) this
 * process reaches the point.
 */
export function crashPoint(point: string): void {
  // Read once: this runs on every message, and an env lookup is a native call.
  target ??= process.env.PI_WORKFLOWS_CRASH_AT ?? "";
  trace ??= process.env.PI_WORKFLOWS_CRASH_TRACE ?? "";
  if (trace !== "") {
    const count = (reached.get(point) ?? 0) + 1;
    reached.set(point, count);
    appendFileSync(trace, `${point}#${count}\n`);
    return;
  }
  if (target === "" || !target.startsWith(point)) return;
  const rest = target.slice(point.length);
  if (rest !== "" && !/^#\d+$/.test(rest)) return;
  const count = (reached.get(point) ?? 0) + 1;
  reached.set(point, count);
  if (count !== (rest === "" ? 1 : Number(rest.slice(1)))) return;
  const once = process.env.PI_WORKFLOWS_CRASH_ONCE;
  if (once) {
    try {
      closeSync(openSync(once, "wx", 0o600));
    } catch {
      return; // already crashed once at this point
    }
  }
  process.kill(process.pid, "SIGKILL");
}
