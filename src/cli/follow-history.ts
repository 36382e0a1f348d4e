/**
 * The lines `--wait` prints for what happens to a run between its steps: a checkpoint or
 * decision answered, a block and its reason, an interruption, a resume, and why a node runs
 * again. Kept apart from follow-printer.ts, which draws the steps themselves.
 */
import type { CliStyle } from "./cli-style.ts";

/** How a node's latest attempt ended, as far as the follower has seen. */
export type LastOutcome = "ok" | "failed" | "timed out" | { interrupted: string };

/**
 * `◆ approval answered`, or taken by its default at the deadline. The node is the event's own
 * `nodeId` (the host lifts it out of the payload, as for every event), not a field of `data`.
 */
export function answeredLine(
  nodeId: string | undefined,
  data: Record<string, unknown>,
  style: CliStyle,
): string {
  const node = nodeId ?? "?";
  const what = data.kind === "checkpoint" ? "checkpoint" : "decision";
  const text = data.resolution === "timeoutDefault"
    ? `${node} took its default answer at its deadline (${what})`
    : `${node} answered (${what})`;
  return `${style.paint("waiting", style.glyph("answered"))} ${text}`;
}

/** `! blocked: effectAmbiguous`: the run is parked until someone acts. */
export function blockedLine(reason: unknown, style: CliStyle): string {
  return `${style.paint("warn", style.glyph("blocked"))} blocked: ${String(reason ?? "unknown")}`;
}

/** `▷ resumed`, and what it was blocked on when it was. */
export function resumedLine(data: Record<string, unknown>, style: CliStyle): string {
  const was = typeof data.wasBlocked === "string" && data.wasBlocked !== ""
    ? ` (was blocked: ${data.wasBlocked})`
    : "";
  return `${style.paint("bold", style.glyph("resumed"))} resumed${was}`;
}

/**
 * `↺ review runs again (visit 2): the workflow routed back to it`: said before a node's second
 * and later starts, from how its previous attempt ended.
 */
export function againLine(
  nodeId: string,
  visit: number,
  last: LastOutcome | undefined,
  style: CliStyle,
): string {
  const why = last === undefined
    ? "it ran before"
    : typeof last === "object"
    ? `its attempt was interrupted (${last.interrupted}) and runs from its start`
    : last === "ok"
    ? "the workflow routed back to it"
    : `its last attempt ${last} and the workflow routes to it again`;
  return `${style.paint("running", style.glyph("interrupted"))} ${nodeId} runs again ` +
    `(visit ${visit}): ${why}`;
}

/** Why a run's worker stopped under a step (`run.interrupted`, `run.recovered`). */
export function interruptionReason(type: string, data: Record<string, unknown>): string {
  if (type === "run.recovered") return "the host restarted";
  return typeof data.reason === "string" && data.reason !== "" ? data.reason : "worker stopped";
}
