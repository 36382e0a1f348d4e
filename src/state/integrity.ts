/**
 * SQLite's own structural check of the state file: `quick_check` (what the host runs before it
 * serves a database) or the fuller `integrity_check` (doctor, which also says where: table, index
 * and page). A damaged page in the middle of the file otherwise only shows when some query
 * reaches it, long after the host started serving.
 */
import type { DatabaseSync } from "node:sqlite";

/** Problems SQLite reports, at most `limit` (one line each, bounded); [] when the file is ok. */
export function integrityProblems(
  db: DatabaseSync,
  check: "quick_check" | "integrity_check",
  limit = 20,
): string[] {
  let rows: Record<string, unknown>[];
  try {
    rows = db.prepare(`PRAGMA ${check}(${Math.max(1, Math.floor(limit))})`).all();
  } catch (error) {
    // Past its first finding the check may reach a page it cannot read at all and throw: the
    // first finding alone still says where the damage is.
    if (limit > 1) return integrityProblems(db, check, 1);
    // A header or root page so broken the check itself cannot run.
    return [oneLine(error instanceof Error ? error.message : String(error))];
  }
  const problems = rows.map((row) => oneLine(String(Object.values(row)[0] ?? "")));
  if (problems.length === 1 && problems[0] === "ok") return [];
  return withTableNames(db, problems);
}

/** `Tree 5 page 261: ...` names the b-tree by root page; say which table or index that is. */
function withTableNames(db: DatabaseSync, problems: string[]): string[] {
  let names: Map<number, string>;
  try {
    const rows = db.prepare("SELECT type, name, rootpage FROM sqlite_master").all() as {
      type: string;
      name: string;
      rootpage: number;
    }[];
    names = new Map(rows.map((r) => [Number(r.rootpage), `${r.type} ${r.name}`]));
  } catch {
    return problems;
  }
  return problems.map((problem) =>
    problem.replace(/\bTree (\d+)\b/, (whole, root) => {
      const name = names.get(Number(root));
      return name ? `${whole} (${name})` : whole;
    })
  );
}

function oneLine(text: string): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 300 ? `${line.slice(0, 300)}…` : line;
}
