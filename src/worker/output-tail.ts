/**
 * A bounded tail of a child's output on disk, in the user-only workers directory: bytes go to
 * `<stem>.out`; when that file reaches half the budget it becomes `<stem>.1.out` (replacing the
 * older half) and a new one starts. So at most `maxBytes` are kept, always including the latest
 * `maxBytes / 2`, and what was written survives a SIGKILL of the writer. Write errors are
 * swallowed: a full disk must not fail the step the output came from.
 */
import { closeSync, mkdirSync, openSync, renameSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";

export interface OutputTail {
  write(chunk: Uint8Array): void;
  close(): void;
}

export function createOutputTail(
  dir: string,
  stem: string,
  suffix: string,
  maxBytes: number,
): OutputTail {
  const current = join(dir, `${stem}${suffix}`);
  const older = join(dir, `${stem}.1${suffix}`);
  const half = Math.max(1, Math.floor(maxBytes / 2));
  let fd: number | null = null;
  let size = 0;
  let broken = false;
  const open = () => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    fd = openSync(current, "a", 0o600);
    size = statSync(current).size;
  };
  return {
    write(chunk) {
      if (broken || chunk.length === 0) return;
      try {
        if (fd === null) open();
        if (size + chunk.length > half && size > 0) {
          closeSync(fd!);
          renameSync(current, older);
          open();
        }
        // A single chunk larger than the budget keeps only its end.
        const piece = chunk.length > half ? chunk.subarray(chunk.length - half) : chunk;
        writeSync(fd!, piece);
        size += piece.length;
      } catch {
        broken = true;
      }
    },
    close() {
      if (fd === null) return;
      try {
        const empty = size === 0;
        closeSync(fd);
        if (empty) rmSync(current, { force: true });
      } catch {
        // already closed
      }
      fd = null;
    },
  };
}
