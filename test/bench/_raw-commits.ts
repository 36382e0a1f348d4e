/**
 * The baseline every throughput benchmark compares against: single-row INSERT commits per
 * second on a SQLite file with the state store's pragmas (`applyWritePragmas`), on the same
 * disk, measured in the same run.
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { applyWritePragmas } from "../../src/state/store.ts";

export function rawCommitRate(dir: string, ms: number): number {
  const db = new DatabaseSync(join(dir, "raw.sqlite"));
  applyWritePragmas(db);
  db.exec("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)");
  const insert = db.prepare("INSERT INTO t (v) VALUES (?)");
  const payload = "x".repeat(200);
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    db.exec("BEGIN IMMEDIATE");
    insert.run(payload);
    db.exec("COMMIT");
    n++;
  }
  const rate = n / ((performance.now() - start) / 1000);
  db.close();
  return rate;
}
