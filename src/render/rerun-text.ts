/**
 * What a fork is, in words the CLI (`rerun`, `retry`) and Pi (`/workflow rerun|retry`) both
 * print: where it came from, what it adopted, which source it runs on, and for a retry the rerun
 * it stands for.
 */
import type { RunRerunReceipt } from "../protocol/rerun-operations.ts";

/** `retry <run> = rerun <run> --from <node> [--visit N] --source current`. */
export function retryMeaning(from: RunRerunReceipt["from"], rerun = "rerun"): string {
  const visit = from.visit > 1 ? ` --visit ${from.visit}` : "";
  return `= ${rerun} ${from.runId} --from ${from.nodeId}${visit} --source current`;
}

/** `from <run> at <node> (visit n); adopted …; source: …`. */
export function forkOriginText(receipt: RunRerunReceipt): string {
  const { from } = receipt;
  return `from ${from.runId} at ${from.nodeId} (visit ${from.visit}); adopted ${receipt.adoptedAttempts} step(s) without running them again; source: ${
    receipt.source === "current" ? "the workflow file as it is now" : "as recorded"
  }`;
}
