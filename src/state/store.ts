/**
 * The state store: one `DatabaseSync` over `state.sqlite` plus the injected clock and ids. Plain
 * functions in this directory take it as their first argument. Opening checks the file's
 * identity, schema version and DDL digest on a read-only connection before anything can write.
 */
import { accessSync, chmodSync, constants, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { stateDirFromEnv } from "../base/state-dir.ts";
import type { StateStore } from "./store-handle.ts";
import type { Clock, IdSource } from "../base/clock.ts";
import {
  StateDamagedError,
  StateMissingError,
  StateOpenError,
  StateSchemaMismatchError,
} from "./errors.ts";
import { integrityProblems } from "./integrity.ts";
import { createStateFile } from "./state-file-create.ts";
import { sqliteFilePath } from "./state-file-path.ts";
import { ddlDigest, SCHEMA_VERSION, schemaDdl, STATE_IDENTITY } from "./schema.ts";
import { writeTransaction } from "./transactions.ts";

export const STATE_FILE_NAME = "state.sqlite";

/**
 * WAL frames after which a commit checkpoints (SQLite's default is 1,000). A checkpoint costs
 * two fsyncs plus the distinct pages since the last one, and a protected write adds ~3.8 frames
 * where a one-row commit adds ~1, so at the default it paid for a checkpoint every ~260 writes.
 * 4,000 frames (a WAL of at most ~16 MiB) still fits one WAL-index hash table, so page lookups
 * cost the same. docs/state.md "Cost of a protected write" has the measurements.
 */
export const WAL_AUTOCHECKPOINT_FRAMES = 4_000;

/**
 * The pragmas of a writable state database: WAL, a durable commit (`synchronous=FULL`: a commit
 * is on disk before any acknowledgement leaves) and the checkpoint interval. On macOS `fsync`
 * only hands the data to the drive, whose cache a power loss empties: `fullfsync` (commits) and
 * `checkpoint_fullfsync` (checkpoints) make SQLite use `F_FULLFSYNC`, which waits for the
 * medium. docs/state.md "Durability on macOS" says what it costs. Benchmarks give their raw
 * baseline file the same.
 */
export function applyWritePragmas(
  db: DatabaseSync,
  platform: NodeJS.Platform = process.platform,
): void {
  db.exec("PRAGMA journal_mode = WAL");
  db.exec("PRAGMA synchronous = FULL");
  db.exec(`PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_FRAMES}`);
  if (platform === "darwin") {
    db.exec("PRAGMA fullfsync = ON");
    db.exec("PRAGMA checkpoint_fullfsync = ON");
  }
}

export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

export type { ReadStats, StateStore } from "./store-handle.ts";

export interface OpenStateStoreOptions {
  stateDir: string;
  clock: Clock;
  ids: IdSource;
  readOnly?: boolean;
  busyTimeoutMs?: number;
  /**
   * Run SQLite's quick check before returning (the host, before it serves the database): a
   * damaged file throws `StateDamagedError` with the backup-and-reset instruction.
   */
  checkIntegrity?: boolean;
}

/**
 * `$PI_WORKFLOWS_STATE_DIR`, else `${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows`, made absolute
 * against the current directory.
 */
export function resolveStateDir(env: Record<string, string | undefined> = process.env): string {
  return stateDirFromEnv(env);
}

/**
 * Creates the state directory (mode 0700) if missing, narrows a wider mode to 0700, and returns
 * it. The host calls it at start, so a 0755 directory is never served as it is.
 */
export function ensureStateDir(stateDir: string): string {
  try {
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    const mode = statSync(stateDir).mode & 0o777;
    if (mode & 0o077) chmodSync(stateDir, 0o700);
    accessSync(stateDir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new StateOpenError(
      stateDir,
      `the state directory is not usable (${codeOf(error)}): it must be a directory you own ` +
        `and can write (the host narrows a wider mode to 0700)`,
      `the state directory is not usable (${codeOf(error)})`,
    );
  }
  return stateDir;
}

/** Opens (and on first use creates) the state database. Throws `StateOpenError`. */
export function openStateStore(opts: OpenStateStoreOptions): StateStore {
  const readOnly = opts.readOnly ?? false;
  const timeout = opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const path = join(opts.stateDir, STATE_FILE_NAME);
  if (!readOnly) ensureStateDir(opts.stateDir);
  if (!readOnly && fileSize(path) === null) {
    createStateFile(path, timeout, (db, temp) => {
      db.exec("PRAGMA auto_vacuum = INCREMENTAL");
      applyWritePragmas(db);
      initialize(storeOf(db, temp, opts, false));
    });
  }
  const size = fileSize(path);
  const exists = size !== null;
  if (exists && !readOnly) ownFileModes(path);
  if (readOnly && !exists) {
    throw new StateMissingError(path, "no state database yet; the host creates it when it starts");
  }
  if (size === 0) {
    // The host never leaves an empty file (state-file-create.ts): this one was truncated or
    // made by something else, so it is not taken as a new database.
    throw new StateOpenError(
      path,
      "the database file is empty (0 bytes): it was truncated or made by something else, and " +
        `nothing was changed. If no runs were kept here, remove it (\`rm ${path}\`) and the ` +
        "host creates a new one; otherwise put back a backup of it",
      "the database file is empty (0 bytes)",
    );
  }
  try {
    accessSync(path, readOnly ? constants.R_OK : constants.R_OK | constants.W_OK);
  } catch {
    throw new StateOpenError(
      path,
      `the file is not ${readOnly ? "readable" : "readable and writable"} by this user; ` +
        `fix it with \`chmod 600 ${path}\``,
      `the database is not ${readOnly ? "readable" : "readable and writable"} by this user`,
    );
  }
  // Check identity before anything can write: even `journal_mode=WAL` rewrites the header.
  // "empty": a SQLite file with no tables yet (nothing to lose), initialized in place.
  const fresh = verifyIdentity(path, timeout) === "empty";
  if (readOnly && fresh) {
    throw new StateMissingError(
      path,
      "the database is empty; the host initializes it when it starts",
    );
  }
  let db: DatabaseSync;
  try {
    db = new DatabaseSync(path, { readOnly, timeout });
    // Only possible before the first table exists and before WAL mode writes the header; the
    // same line opens schema.sql (so the digest covers it).
    if (fresh && !readOnly) db.exec("PRAGMA auto_vacuum = INCREMENTAL");
    if (!readOnly) applyWritePragmas(db);
    db.exec("PRAGMA foreign_keys = ON");
  } catch (error) {
    throw sqliteOpenError(path, error);
  }
  const store = storeOf(db, path, opts, readOnly);
  if (fresh && !readOnly) initialize(store);
  else if (opts.checkIntegrity) {
    const problems = integrityProblems(db, "quick_check", 1);
    if (problems.length > 0) {
      closeStateStore(store);
      throw new StateDamagedError(path, problems[0]);
    }
  }
  return store;
}

function storeOf(
  db: DatabaseSync,
  path: string,
  opts: OpenStateStoreOptions,
  readOnly: boolean,
): StateStore {
  return {
    db,
    clock: opts.clock,
    ids: opts.ids,
    path,
    readOnly,
    statements: new Map(),
    beforeStatement: null,
    readStats: null,
    afterCommit: null,
  };
}

/** Closes the database; the store must not be used afterwards. */
export function closeStateStore(store: StateStore): void {
  store.statements.clear();
  if (store.db.isOpen) store.db.close();
}

function initialize(store: StateStore): void {
  try {
    writeTransaction(store, () => {
      // Another process may have initialized it between our check and this lock.
      const has = store.db.prepare(
        "SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = 'meta'",
      ).get();
      if (has) return;
      store.db.exec(schemaDdl());
      const insert = store.db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
      insert.run("identity", STATE_IDENTITY);
      insert.run("schema_version", String(SCHEMA_VERSION));
      insert.run("ddl_digest", ddlDigest());
      insert.run("created_at", String(store.clock.now()));
    });
  } catch (error) {
    closeStateStore(store);
    throw new StateOpenError(store.path, `initialization failed: ${describeSqliteError(error)}`);
  }
  verifyIdentity(store.path, DEFAULT_BUSY_TIMEOUT_MS);
}

/**
 * Reads identity, version and digest on a read-only connection. Returns "empty" for a file with
 * no tables (a new database), "ok" when everything matches; throws otherwise.
 */
export function verifyIdentity(path: string, timeout: number): "empty" | "ok" {
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(path, { readOnly: true, timeout });
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all();
    if (tables.length === 0) return "empty";
    if (!tables.some((t) => t.name === "meta")) {
      throw new StateSchemaMismatchError(path, "it is not a pi-workflows state database");
    }
    const rows = db.prepare("SELECT key, value FROM meta").all() as Array<
      { key: string; value: string }
    >;
    const meta = new Map(rows.map((r) => [r.key, r.value]));
    if (meta.get("identity") !== STATE_IDENTITY) {
      throw new StateSchemaMismatchError(
        path,
        `its identity is ${JSON.stringify(meta.get("identity") ?? null)}, not ${STATE_IDENTITY}`,
      );
    }
    if (meta.get("schema_version") !== String(SCHEMA_VERSION)) {
      throw new StateSchemaMismatchError(
        path,
        `its schema version is ${meta.get("schema_version")}, this build needs ${SCHEMA_VERSION}`,
      );
    }
    if (meta.get("ddl_digest") !== ddlDigest()) {
      throw new StateSchemaMismatchError(
        path,
        "its schema digest differs from this build (state from another alpha build)",
      );
    }
    return "ok";
  } catch (error) {
    if (error instanceof StateOpenError) throw error;
    throw sqliteOpenError(path, error);
  } finally {
    if (db?.isOpen) db.close();
  }
}

/**
 * Modes before a writing open, for files of this user: a database readable by others is
 * narrowed to 0600 (one that this user cannot write stays, and the access check says how to fix
 * it); its `-wal` and `-shm` files are set to 0600, since SQLite gives new ones the database's
 * mode and a read-only open of a 0400 database (doctor) would otherwise leave 0400 companions that
 * make the host fail "attempt to write a readonly database" after the database was fixed.
 */
function ownFileModes(path: string): void {
  const uid = process.getuid?.();
  if (uid === undefined) return;
  const fix = (file: string, wrong: (mode: number) => boolean) => {
    try {
      const stat = statSync(file);
      if (stat.uid === uid && wrong(stat.mode & 0o777)) chmodSync(file, 0o600);
    } catch {
      // absent, or gone meanwhile
    }
  };
  fix(path, (mode) => (mode & 0o077) !== 0);
  const companions = sqliteFilePath(path);
  fix(`${companions}-wal`, (mode) => mode !== 0o600);
  fix(`${companions}-shm`, (mode) => mode !== 0o600);
}

function fileSize(path: string): number | null {
  try {
    return statSync(path).size;
  } catch (error) {
    if (codeOf(error) === "ENOENT") return null;
    if (codeOf(error) === "ENOTDIR") {
      const dir = dirname(path);
      throw new StateOpenError(
        path,
        `the state directory ${dir} is a file, not a directory; move it away, or point ` +
          "PI_WORKFLOWS_STATE_DIR at a directory",
        "the state directory is a file, not a directory",
      );
    }
    throw new StateOpenError(path, `cannot inspect the file (${codeOf(error)})`);
  }
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === "string" ? code : "error";
}

/**
 * A read of an open store that failed on a damaged page (SQLite "database disk image is
 * malformed"), as the same `StateDamagedError` an open gives; null for any other error.
 */
export function damagedReadError(path: string, error: unknown): StateDamagedError | null {
  const message = error instanceof Error ? error.message : String(error);
  if (!/not a database|malformed|corrupt/i.test(message)) return null;
  return new StateDamagedError(path, message.split("\n")[0].slice(0, 300), "read");
}

/** A damaged file gets the backup-and-reset instruction; other failures say what to fix. */
function sqliteOpenError(path: string, error: unknown): StateOpenError {
  const message = error instanceof Error ? error.message : String(error);
  if (/not a database|malformed|corrupt/i.test(message)) {
    return new StateDamagedError(path, message.split("\n")[0].slice(0, 300));
  }
  return new StateOpenError(path, describeSqliteError(error));
}

function describeSqliteError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (/not a database|malformed|corrupt/i.test(message)) {
    return "the file is not a SQLite database or is corrupt; move it aside and restart";
  }
  if (/unable to open|readonly|permission|access/i.test(message)) {
    return "the file cannot be opened with the needed access; check it is yours with mode 0600";
  }
  if (/locked|busy/i.test(message)) {
    return "the database stayed locked past the busy timeout; another process holds it";
  }
  return message.split("\n")[0] ?? "unknown error";
}
