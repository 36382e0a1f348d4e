/**
 * What a fork is, in words the CLI (`rerun`, `retry`) and Pi (`/workflow rerun|retry`) both
 * print: where it came from, what it adopted, which source it runs on, and for a retry the rerun
 * it stands for.
 */
import type { RunRerunReceipt } from "../protocol/rerun-operations.ts";

/** How a front end prints a run id (the CLI: its short form; Pi: whole). */
type RunIdText = (runId: string) => string;
const whole: RunIdText = (runId) => runId;

/** `retry <run> = rerun <run> --from <node> [--visit N] --source current`. */
export function retryMeaning(
  from: RunRerunReceipt["from"],
  rerun = "rerun",
  id: RunIdText = whole,
): string {
  const visit = from.visit > 1 ? ` --visit ${from.visit}` : "";
  return `= ${rerun} ${id(from.runId)} --from ${from.nodeId}${visit} --source current`;
}

/** `from <run> at <node> (visit n); adopted …; source: …`. */
export function forkOriginText(receipt: RunRerunReceipt, id: RunIdText = whole): string {
  const { from } = receipt;
  return `from ${
    id(from.runId)
  } at ${from.nodeId} (visit ${from.visit}); adopted ${receipt.adoptedAttempts} step(s) without running them again; source: ${
    receipt.source === "current" ? "the workflow file as it is now" : "as recorded"
  }`;
}
