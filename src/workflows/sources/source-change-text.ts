/**
 * A change of a run's workflow source in words, for the refusal of a plain `resume` (host) and
 * for `status` (CLI) alike: what changed, never the reason code, and whether it is a built-in,
 * which changes with the pi-workflows version and has no file a person could restore. Reasons
 * are `SourceChange`'s (identity.ts), read back from a receipt as strings.
 */
/** `/p/w.workflow.ts has changed`, `the built-in workflow echo is another revision ...`. */
export function sourceChangeWords(change: { source: string; reason: string }): string {
  const name = change.source.startsWith("builtin:")
    ? `the built-in workflow ${change.source.slice("builtin:".length)}`
    : change.source;
  switch (change.reason) {
    case "revisionChanged":
      return `${name} is another revision in this version of pi-workflows`;
    case "unknownBuiltin":
      return `${name} is no longer in this version of pi-workflows`;
    case "missing":
    case "removed":
      return `${name} is gone`;
    case "added":
      return `${name} was added`;
    case "changed":
      return `${name} has changed`;
    default:
      return `${name} differs from the one the run started with`;
  }
}

/** A built-in among the changes: nothing to restore by hand, only this version's to go on with. */
export function builtinSourceChanged(changes: readonly { reason: string }[]): boolean {
  return changes.some((c) => c.reason === "revisionChanged" || c.reason === "unknownBuiltin");
}
