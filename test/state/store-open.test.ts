import { createHash } from "node:crypto";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { DatabaseSync } from "node:sqlite";
import { afterEach, describe, expect, it } from "vitest";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import {
  StateOpenError,
  StateSchemaMismatchError,
  ValueTooLargeError,
} from "../../src/state/errors.ts";
import { ddlDigest } from "../../src/state/schema.ts";
import {
  closeStateStore,
  openStateStore,
  resolveStateDir,
  STATE_FILE_NAME,
} from "../../src/state/store.ts";
import { enqueue, tempDir } from "../support/state-store.ts";

const dirs: string[] = [];
function newDir(): string {
  const d = tempDir();
  dirs.push(d);
  return d;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const open = (stateDir: string, readOnly = false) =>
  openStateStore({ stateDir, clock: new FakeClock(), ids: sequentialIds(), readOnly });
const sha = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");
const isRoot = process.getuid?.() === 0;

describe("resolveStateDir()", () => {
  it("prefers PI_WORKFLOWS_STATE_DIR, then PI_CODING_AGENT_DIR/workflows, then ~/.pi/agent", () => {
    expect(resolveStateDir({ PI_WORKFLOWS_STATE_DIR: "/s", PI_CODING_AGENT_DIR: "/a" })).toBe("/s");
    expect(resolveStateDir({ PI_CODING_AGENT_DIR: "/a" })).toBe("/a/workflows");
    expect(resolveStateDir({})).toMatch(/\.pi\/agent\/workflows$/);
  });
});

describe("openStateStore()", () => {
  it("creates a 0700 directory and a 0600 WAL database with the identity rows", () => {
    const stateDir = join(newDir(), "nested", "state");
    const store = open(stateDir);
    try {
      expect(statSync(stateDir).mode & 0o777).toBe(0o700);
      expect(statSync(join(stateDir, STATE_FILE_NAME)).mode & 0o777).toBe(0o600);
      expect(store.db.prepare("PRAGMA journal_mode").get()).toEqual({ journal_mode: "wal" });
      expect(store.db.prepare("PRAGMA synchronous").get()).toEqual({ synchronous: 2 });
      expect(store.db.prepare("PRAGMA foreign_keys").get()).toEqual({ foreign_keys: 1 });
      const meta = Object.fromEntries(
        (store.db.prepare("SELECT key, value FROM meta").all() as Array<
          { key: string; value: string }
        >)
          .map((r) => [r.key, r.value]),
      );
      expect(meta).toMatchObject({
        identity: "pi-workflows-state",
        schema_version: "1",
        ddl_digest: ddlDigest(),
      });
      // Made whole under a temporary name, then linked into place: nothing else is left.
      expect(readdirSync(stateDir).filter((f) => f.startsWith(STATE_FILE_NAME)).sort())
        .toEqual([STATE_FILE_NAME, `${STATE_FILE_NAME}-shm`, `${STATE_FILE_NAME}-wal`]);
    } finally {
      closeStateStore(store);
    }
  });

  it("refuses an empty (0-byte) database file, read-only or not, and leaves it as it is", () => {
    const stateDir = newDir();
    const file = join(stateDir, STATE_FILE_NAME);
    writeFileSync(file, "", { mode: 0o600 });
    // What a creation killed midway leaves (its process gone): removed by the next creation.
    const leftover = `${file}.new-999999999`;
    writeFileSync(leftover, "half made");
    for (const readOnly of [true, false]) {
      expect(() => open(stateDir, readOnly)).toThrow(
        /the database file is empty \(0 bytes\): .*nothing was changed.*remove it \(`rm /,
      );
      expect(statSync(file).size).toBe(0);
    }
    rmSync(file);
    closeStateStore(open(stateDir));
    expect(existsSync(leftover)).toBe(false);
  });

  it("reopens an existing database and keeps its data, read-only too", () => {
    const stateDir = newDir();
    const a = open(stateDir);
    const runId = enqueue(a);
    closeStateStore(a);
    const b = open(stateDir, true);
    try {
      expect(b.db.prepare("SELECT run_id FROM runs").all()).toEqual([{ run_id: runId }]);
      expect(() => enqueue(b)).toThrow(/read-only/);
    } finally {
      closeStateStore(b);
    }
  });

  it("refuses a database with another DDL digest before any mutation, byte-identical", () => {
    const stateDir = newDir();
    closeStateStore(open(stateDir));
    const file = join(stateDir, STATE_FILE_NAME);
    const raw = new DatabaseSync(file);
    raw.exec("UPDATE meta SET value = 'sha256:old' WHERE key = 'ddl_digest'");
    raw.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    raw.close();
    const before = sha(file);
    let error: unknown;
    try {
      open(stateDir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StateSchemaMismatchError);
    const message = (error as Error).message;
    expect(message).toContain(file);
    expect(message).toContain(`mv ${file} ${file}.bak`);
    expect(message).toMatch(/digest/);
    expect(message).not.toContain("\n");
    expect(sha(file)).toBe(before);
    // The read-only check may leave an empty WAL beside it; it never holds a frame.
    expect(existsSync(`${file}-wal`) ? statSync(`${file}-wal`).size : 0).toBe(0);
  });

  it("refuses another identity, another version and a foreign database", () => {
    for (
      const [key, value, pattern] of [
        ["identity", "other-app", /identity/],
        ["schema_version", "2", /schema version is 2/],
      ] as const
    ) {
      const stateDir = newDir();
      closeStateStore(open(stateDir));
      const raw = new DatabaseSync(join(stateDir, STATE_FILE_NAME));
      raw.prepare("UPDATE meta SET value = ? WHERE key = ?").run(value, key);
      raw.close();
      expect(() => open(stateDir)).toThrow(pattern);
    }
    const foreign = newDir();
    const raw = new DatabaseSync(join(foreign, STATE_FILE_NAME));
    raw.exec("CREATE TABLE things (x)");
    raw.close();
    const before = sha(join(foreign, STATE_FILE_NAME));
    expect(() => open(foreign)).toThrow(/not a pi-workflows state database/);
    expect(sha(join(foreign, STATE_FILE_NAME))).toBe(before);
  });

  it("reports a corrupt file in one clear line", () => {
    const stateDir = newDir();
    writeFileSync(
      join(stateDir, STATE_FILE_NAME),
      "this is not sqlite at all, just text\n".repeat(200),
    );
    const before = sha(join(stateDir, STATE_FILE_NAME));
    let error: unknown;
    try {
      open(stateDir);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(StateOpenError);
    expect((error as Error).message).toMatch(
      /^Cannot open workflow state .*: the database is damaged \(SQLite: file is not a database\); the file was left untouched\. .*mv /,
    );
    expect((error as Error).message).not.toContain("\n");
    expect(sha(join(stateDir, STATE_FILE_NAME))).toBe(before);
  });

  it("reports an unusable state directory or database path clearly", () => {
    const parent = newDir();
    const fileAsDir = join(parent, "not-a-dir");
    writeFileSync(fileAsDir, "x");
    expect(() => open(fileAsDir)).toThrow(StateOpenError);
    expect(() => open(fileAsDir)).toThrow(/state directory is not usable/);
    const dirAsFile = newDir();
    mkdirSync(join(dirAsFile, STATE_FILE_NAME));
    expect(() => open(dirAsFile)).toThrow(StateOpenError);
  });

  it.runIf(isRoot)("reports a database another user cannot read, in a child run as nobody", () => {
    const stateDir = newDir();
    closeStateStore(open(stateDir));
    // Let `nobody` reach the file but not read it: the directory is traversable, the file 0600.
    chmodSync(stateDir, 0o711);
    const child = spawnSync(
      process.execPath,
      [fileURLToPath(new URL("./fixtures/open-as-other-user.ts", import.meta.url)), stateDir],
      { uid: 65534, gid: 65534, encoding: "utf8", timeout: 20_000 },
    );
    expect(child.status, child.stderr).toBe(0);
    const result = JSON.parse(child.stdout) as { readOnly: string; writable: string };
    expect(result.readOnly).toMatch(
      /^StateOpenError: Cannot open workflow state .*: the file is not readable by this user; fix it with `chmod 600 /,
    );
    expect(result.writable).toMatch(/^StateOpenError: .*state directory is not usable \(EPERM\)/);
    for (const message of Object.values(result)) expect(message).not.toContain("\n");
  });

  it.skipIf(isRoot)("reports a database without read/write permission", () => {
    const stateDir = newDir();
    closeStateStore(open(stateDir));
    chmodSync(join(stateDir, STATE_FILE_NAME), 0o000);
    expect(() => open(stateDir)).toThrow(/chmod 600/);
  });

  it("read-only open of a missing database says the host creates it", () => {
    expect(() => open(newDir(), true)).toThrow(/no state database yet/);
  });

  it("limits each durable value to 1 MiB with an error naming the field", () => {
    const store = open(newDir());
    try {
      const big = "x".repeat(1024 * 1024);
      expect(() => enqueue(store, { input: { big } })).toThrow(ValueTooLargeError);
      expect(() => enqueue(store, { input: { big } })).toThrow(
        /Value too large for input: \d+ bytes/,
      );
      expect(store.db.prepare("SELECT COUNT(*) AS n FROM runs").get()).toEqual({ n: 0 });
    } finally {
      closeStateStore(store);
    }
  });
});

describe("ddlDigest()", () => {
  it("ignores comments and whitespace but not a change in the schema", () => {
    const ddl = "CREATE TABLE a (\n  x INTEGER -- note\n);\n";
    expect(ddlDigest(ddl)).toBe(ddlDigest("-- header\nCREATE TABLE a (x INTEGER);"));
    expect(ddlDigest(ddl)).not.toBe(ddlDigest("CREATE TABLE a (x TEXT);"));
    expect(ddlDigest()).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});
