/**
 * A run id as people read it: a run id is `run-<uuid>` (40 characters); text output (CLI lists,
 * the viewer) shows the first 8 hex digits, `run-1a2b3c4d`, which every command accepts as a
 * prefix.
 */
export const UUID_RUN_ID = /^run-([0-9a-f]{8})-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** `run-1a2b3c4d` for a generated id; any other id as it is. */
export function shortRunId(runId: string): string {
  const match = UUID_RUN_ID.exec(runId);
  return match ? `run-${match[1]}` : runId;
}
