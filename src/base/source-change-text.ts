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

/**
 * The ways on from a source change: `files`, restore them or accept them as they are now;
 * `builtin`, accept this version's built-in (nothing to restore by hand); `rootGone`, the run's own
 * workflow is a built-in this version no longer has, so there is nothing to accept either (the
 * host cannot load it): cancel the run, or resume it under a pi-workflows version that has it;
 * `includeGone`, a project workflow includes a built-in this version no longer has: its file does
 * not load as it is (the include fails), so accepting it needs the include removed first.
 */
export function sourceWayOn(
  changes: readonly { reason: string; root?: boolean }[],
): "files" | "builtin" | "rootGone" | "includeGone" {
  if (changes.some((c) => c.root === true && c.reason === "unknownBuiltin")) return "rootGone";
  if (changes.some((c) => c.reason === "unknownBuiltin")) return "includeGone";
  // Another revision of a built-in: nothing to restore by hand, only this version's to go on with.
  return changes.some((c) => c.reason === "revisionChanged") ? "builtin" : "files";
}

/** `builtin:old`, `builtin:a and builtin:b`: the gone built-ins a project workflow includes. */
export function goneIncludes(changes: readonly { source?: string; reason: string }[]): string {
  const names = changes.filter((c) => c.reason === "unknownBuiltin" && c.source !== undefined)
    .map((c) => c.source!);
  return names.length <= 1
    ? (names[0] ?? "the built-in")
    : `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}
