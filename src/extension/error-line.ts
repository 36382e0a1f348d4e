/**
 * Every failure Pi shows from this extension is one line: the host's own actionable message
 * (its outcome said in words), never a stack trace.
 */
import { HostCommandError } from "../client/command-receipt.ts";

const OUTCOME_WORDS: Record<string, string> = {
  rejected: "refused",
  conflict: "conflict",
  notFound: "not found",
  claimLost: "claim lost",
  unavailable: "host unavailable",
};

export function errorLine(error: unknown): string {
  if (error instanceof HostCommandError) {
    const detail = error.message.replace(/^Host answered \w+: /, "");
    return oneLine(`${OUTCOME_WORDS[error.outcome] ?? error.outcome}: ${detail}`);
  }
  return oneLine(error instanceof Error ? error.message : String(error));
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim() || "unknown error";
  return flat.length > 1000 ? `${flat.slice(0, 999)}…` : flat;
}
