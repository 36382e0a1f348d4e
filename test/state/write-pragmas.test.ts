import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, describe, expect, it } from "vitest";
import { applyWritePragmas, WAL_AUTOCHECKPOINT_FRAMES } from "../../src/state/store.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-wf-pragmas-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function pragmas(platform: NodeJS.Platform) {
  const db = new DatabaseSync(join(dir, `${platform}.sqlite`));
  try {
    applyWritePragmas(db, platform);
    const read = (name: string) => Object.values(db.prepare(`PRAGMA ${name}`).get()!)[0];
    return {
      journal: read("journal_mode"),
      synchronous: read("synchronous"),
      autocheckpoint: read("wal_autocheckpoint"),
      fullfsync: read("fullfsync"),
      checkpointFullfsync: read("checkpoint_fullfsync"),
    };
  } finally {
    db.close();
  }
}

describe("applyWritePragmas()", () => {
  it("asks macOS for F_FULLFSYNC on commits and checkpoints", () => {
    expect(pragmas("darwin")).toEqual({
      journal: "wal",
      synchronous: 2, // FULL
      autocheckpoint: WAL_AUTOCHECKPOINT_FRAMES,
      fullfsync: 1,
      checkpointFullfsync: 1,
    });
  });

  it("leaves them off on Linux, where fsync reaches the disk", () => {
    expect(pragmas("linux")).toMatchObject({
      synchronous: 2,
      fullfsync: 0,
      checkpointFullfsync: 0,
    });
  });
});
