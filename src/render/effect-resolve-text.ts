/**
 * The `pi-workflows effect resolve` commands a person runs to record what an ambiguous effect
 * did. One copy: the CLI's `status` and Pi's `/workflow status` both print them.
 */
import type {
  AmbiguousEffectSummary,
  AttemptSummary,
  RunSummary,
} from "../protocol/run-operations.ts";

/** `pi-workflows effect resolve <run> <attempt>`; the verdict flag comes after it. */
export function effectResolveCommand(runIdText: string, attemptId: string): string {
  return `pi-workflows effect resolve ${runIdText} ${attemptId}`;
}

/** One line per effect that may have applied without a receipt (none: no lines). */
export function ambiguousEffectLines(ambiguous: readonly AmbiguousEffectSummary[]): string[] {
  if (ambiguous.length === 0) return [];
  return [
    "ambiguous effects (may have applied without a receipt):",
    ...ambiguous.map((e) =>
      `  node ${e.nodeId}, attempt ${e.attemptId}, effect ${e.effectId}${
        e.managed ? "" : " (action without a managed effect)"
      }`
    ),
  ];
}

/**
 * The verdict commands for a run blocked on an ambiguous effect (its last attempt), or none.
 * `runIdText` is the id as the caller shows it (any unique prefix is accepted).
 */
export function blockedEffectResolveLines(
  run: RunSummary,
  attempts: readonly AttemptSummary[],
  runIdText: string,
): string[] {
  const blocking = attempts.at(-1);
  if (run.blockedReason !== "effectAmbiguous" || !blocking) return [];
  const base = effectResolveCommand(runIdText, blocking.attemptId);
  return [
    "check the external system, then record what happened (a plain resume is refused):",
    `  ${base} --applied '<output-json>'   it applied; the JSON becomes the node's output`,
    `  ${base} --not-applied               it did not apply; run the node again`,
    `  ${base} --retry                     unknown; run the node again anyway`,
  ];
}

/** The verdict commands for an ended run's ambiguous effects (nothing runs again). */
export function endedEffectResolveLines(
  ambiguous: readonly AmbiguousEffectSummary[],
  runIdText: string,
): string[] {
  const target = ambiguous[0];
  if (!target) return [];
  const base = effectResolveCommand(runIdText, target.attemptId);
  return [
    "the run has ended: check these effects by hand, then record what happened (nothing runs again):",
    `  ${base} --applied '<output-json>'   it applied; the JSON is kept as its receipt`,
    `  ${base} --not-applied               it did not apply`,
  ];
}
