/**
 * Runs the minimal crash-test host (`fixtures/host-entry.ts`) on a state directory until it
 * exits (no work left) or is killed at its crash point, with a deadline. `killCrashHosts()`
 * SIGKILLs every one still running and waits for their exits (afterAll).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { join } from "node:path";
import { NODE_ARGS } from "../support/host.ts";

const HOST_ENTRY = join(import.meta.dirname, "fixtures", "host-entry.ts");
const children = new Set<ChildProcess>();

export function runCrashHost(
  stateDir: string,
  env: NodeJS.ProcessEnv,
  ms: number,
): Promise<{ code: number | null; signal: string | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_ARGS, HOST_ENTRY, stateDir], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.add(child);
    let stderr = "";
    child.stderr!.on("data", (chunk) => stderr = (stderr + chunk).slice(-8000));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`Host did not finish within ${ms} ms:\n${stderr}`));
    }, ms);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, signal, stderr });
    });
  });
}

export async function killCrashHosts(): Promise<void> {
  const exits = [...children].map((child) =>
    new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGKILL");
    })
  );
  await Promise.all(exits);
}
