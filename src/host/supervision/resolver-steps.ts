/**
 * The resolver's last reported step in words, for the one-line error of a resolver that died or
 * hung: "loading /p/x.workflow.ts (its top-level code) did not finish within 15000 ms", "the
 * resolver exited with code 3 while running the input function of /p/x.workflow.ts".
 */
import type { ResolveProgress } from "../../protocol/resolve-progress.ts";
import type { ChildExit } from "./children/spawn-child.ts";

export function describeResolveStep(step: ResolveProgress | null, workflow: string): string {
  const file = step?.file ?? `"${workflow}"`;
  switch (step?.step) {
    case undefined:
      return `starting to resolve "${workflow}"`;
    case "find":
      return `finding workflow "${workflow}"`;
    case "load":
      return `loading ${file} (its top-level code)`;
    case "include":
      return `loading the included ${file} (its top-level code)`;
    case "compile":
      return `checking the graph of ${file}`;
    case "input":
      return `running the input function of ${file}`;
    case "title":
      return `running the title function of ${file}`;
  }
}

/** Why a step may never finish, where the author can do something about it. */
export function stuckHint(step: ResolveProgress | null): string {
  switch (step?.step) {
    case "load":
    case "include":
      return ": code at the top level of the file waits for something that never comes or loops";
    case "input":
    case "title":
      return ": the function waits for something that never comes or loops";
    default:
      return " (the machine may be overloaded; PI_WORKFLOWS_WORKER_STARTUP_MS sets the limit)";
  }
}

/** `exited with code 3`, `was killed by SIGKILL`, or `exited` when not known yet. */
export function exitWords(exit: ChildExit | null): string {
  if (exit?.signal) return `was killed by ${exit.signal}`;
  if (exit && exit.code !== null) return `exited with code ${exit.code}`;
  return "exited";
}
