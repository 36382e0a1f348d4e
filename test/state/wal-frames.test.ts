/**
 * The WAL's frames as its WAL-index header says (src/state/retention/wal-frames.ts): the count
 * SQLite's own checkpoint reports, a new salt each time the WAL starts over, null without one.
 */
import { afterEach, describe, expect, it } from "vitest";
import { framesBetween, readWalPosition } from "../../src/state/retention/wal-frames.ts";
import { type Fixture, openFixture } from "../support/state-store.ts";

let fx: Fixture;
afterEach(() => fx?.close());

describe("the WAL's position", () => {
  it("counts the frames SQLite counts, and sees the WAL start over", () => {
    fx = openFixture();
    const db = fx.store.db;
    db.exec("PRAGMA wal_autocheckpoint = 0");
    db.exec("CREATE TABLE scratch (x BLOB)");
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const start = readWalPosition(fx.store.path)!;
    expect(start).not.toBeNull();
    const insert = db.prepare("INSERT INTO scratch VALUES (randomblob(3000))");
    for (let i = 0; i < 20; i++) insert.run();
    const grown = readWalPosition(fx.store.path)!;
    const checkpoint = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as {
      log: number;
      checkpointed: number;
    };
    expect(grown.frames).toBe(checkpoint.log);
    expect(framesBetween(start, grown)).toBe(grown.frames - start.frames);
    // The checkpoint copied every frame: the next commit starts the WAL over, with a new salt.
    expect(checkpoint.checkpointed).toBe(checkpoint.log);
    insert.run();
    const restarted = readWalPosition(fx.store.path)!;
    expect(restarted.salt).not.toBe(grown.salt);
    expect(restarted.frames).toBeLessThan(grown.frames);
    expect(framesBetween(grown, restarted)).toBe(restarted.frames);
  });

  it("is null where there is no WAL-index", () => {
    fx = openFixture();
    expect(readWalPosition(`${fx.store.path}.missing`)).toBeNull();
  });
});
