/**
 * The WAL's frames as its WAL-index header says (src/state/retention/wal-frames.ts): the count
 * SQLite's own checkpoint reports, a new salt each time the WAL starts over, null without one.
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { framesBetween, readWalPosition } from "../../src/state/retention/wal-frames.ts";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
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

  it("reads the WAL-index beside a symlinked state file's target, where SQLite keeps it", () => {
    const root = mkdtempSync(join(tmpdir(), "wal-frames-"));
    const open = (stateDir: string) =>
      openStateStore({ stateDir, clock: new FakeClock(), ids: sequentialIds() });
    try {
      closeStateStore(open(join(root, "elsewhere")));
      mkdirSync(join(root, "state"), { mode: 0o700 });
      symlinkSync(join(root, "elsewhere", "state.sqlite"), join(root, "state", "state.sqlite"));
      const store = open(join(root, "state"));
      try {
        store.db.exec("CREATE TABLE scratch (x INTEGER)");
        const position = readWalPosition(store.path)!;
        const checkpoint = store.db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as {
          log: number;
        };
        expect(position).not.toBeNull();
        expect(position.frames).toBe(checkpoint.log);
      } finally {
        closeStateStore(store);
      }
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("is null where there is no WAL-index", () => {
    fx = openFixture();
    expect(readWalPosition(`${fx.store.path}.missing`)).toBeNull();
  });
});

describe("reading the WAL-index header", () => {
  // Linux lists every fcntl lock in /proc/locks: `<n>: POSIX ADVISORY <READ|WRITE> <pid>
  // <major>:<minor>:<inode> <start> <end>`.
  const locksOn = (path: string): string[] => {
    const { ino } = statSync(path);
    return readFileSync("/proc/locks", "utf8").split("\n").filter((line) => {
      const fields = line.trim().split(/\s+/);
      return fields[4] === String(process.pid) && fields[5]?.endsWith(`:${ino}`);
    }).map((line) => line.trim().split(/\s+/).slice(6).join("-"));
  };

  it.skipIf(!existsSync("/proc/locks"))(
    "leaves SQLite's locks on the -shm file in place (closing a descriptor would drop them)",
    () => {
      fx = openFixture();
      fx.store.db.exec("CREATE TABLE scratch (x INTEGER)");
      const shm = `${fx.store.path}-shm`;
      const held = locksOn(shm);
      // The connection's lock that tells others the index is in use.
      expect(held.length).toBeGreaterThan(0);
      for (let i = 0; i < 3; i++) {
        expect(readWalPosition(fx.store.path)).not.toBeNull();
        expect(locksOn(shm)).toEqual(held);
      }
    },
  );

  it("reads a file that replaced the one it read before", () => {
    const dir = mkdtempSync(join(tmpdir(), "wal-frames-"));
    const open = () =>
      openStateStore({ stateDir: dir, clock: new FakeClock(), ids: sequentialIds() });
    try {
      const first = open();
      first.db.exec("CREATE TABLE scratch (x INTEGER)");
      expect(readWalPosition(first.path)).not.toBeNull();
      // The last connection's close removes -shm; the next open makes another file.
      closeStateStore(first);
      const second = open();
      try {
        const insert = second.db.prepare("INSERT INTO scratch VALUES (1)");
        for (let i = 0; i < 5; i++) insert.run();
        const position = readWalPosition(second.path)!;
        const checkpoint = second.db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as {
          log: number;
        };
        expect(position.frames).toBe(checkpoint.log);
        expect(position.frames).toBeGreaterThan(0);
      } finally {
        closeStateStore(second);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
