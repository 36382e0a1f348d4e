/** Where SQLite keeps a database's -wal and -shm files. */
import { realpathSync } from "node:fs";

/**
 * The file SQLite opens for `path`: a symlink's target (its unix VFS resolves links), so the
 * database's -wal and -shm files sit beside the target, not beside the link. `path` itself when
 * it cannot be resolved (absent, or a directory on the way is unreadable).
 */
export function sqliteFilePath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
