/**
 * Turns valibot issues into the one-line error every boundary reports: the field path, then the
 * problem, e.g. `payload.cwd: Invalid type: Expected string but received undefined`.
 */
import * as v from "valibot";

export type SchemaResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** One line naming the first problem (with its field path) and how many others there were. */
export function describeIssues(
  issues: readonly v.BaseIssue<unknown>[],
  prefix?: string,
): string {
  const first = issues[0];
  if (!first) return prefix ? `${prefix}: invalid value` : "Invalid value";
  const dotPath = v.getDotPath(first);
  const path = [prefix, dotPath].filter((part) => part).join(".") || "value";
  const problem = describeProblem(first, dotPath);
  const more = issues.length > 1 ? ` (and ${issues.length - 1} more)` : "";
  return `${path}: ${problem}${more}`;
}

/** `safeParse` with the one-line error. */
export function parseWith<T extends v.GenericSchema>(
  schema: T,
  value: unknown,
  prefix?: string,
): SchemaResult<v.InferOutput<T>> {
  const result = v.safeParse(schema, value);
  if (result.success) return { ok: true, value: result.output };
  return { ok: false, error: describeIssues(result.issues, prefix) };
}

function describeProblem(issue: v.BaseIssue<unknown>, dotPath: string | null): string {
  // A strict object reports an extra key as "Expected never"; a required key as "Expected <key>".
  if (issue.type === "strict_object" && dotPath && issue.expected === "never") {
    return "unknown field";
  }
  if (issue.input === undefined && issue.kind === "schema") return "missing required field";
  return issue.message;
}
