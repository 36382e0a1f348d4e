/**
 * Captured output of a child the host supervises (every kind): its stdout or stderr pipe, copied
 * by the host into a user-only file with the cap enforced at the write. Past the cap nothing
 * more reaches the file (a last line says where it was cut) and `onCut` fires once, so the
 * caller stops the child; the host keeps draining the pipe meanwhile, so the child never blocks
 * on a full pipe while it is stopped. The files of all epochs share one byte budget
 * (src/host/worker-log-budget.ts), which never removes a file still being captured.
 */
import { createWriteStream, rmSync, statSync } from "node:fs";
import type { Readable } from "node:stream";

export interface CapturedStream {
  /** Resolves once the file is closed (the pipe ended or was destroyed). */
  done: Promise<void>;
}

/** The files being captured now, by every child of every kind (the log budget keeps them). */
const capturing = new Set<string>();

export function capturedNow(): ReadonlySet<string> {
  return capturing;
}

export function captureStream(
  source: Readable,
  path: string,
  maxBytes: number,
  onCut: (bytes: number) => void,
): CapturedStream {
  const file = createWriteStream(path, { flags: "a", mode: 0o600 });
  capturing.add(path);
  let written = 0;
  let cut = false;
  let failed = false;
  const done = new Promise<void>((resolve) => file.once("close", resolve))
    .then(() => void capturing.delete(path));
  // A file that cannot be written (disk full) loses the output, never the host.
  file.on("error", () => {
    failed = true;
    source.resume();
  });
  source.on("data", (chunk: Buffer) => {
    if (cut || failed) return;
    const room = maxBytes - written;
    if (chunk.length > room) {
      cut = true;
      if (room > 0) file.write(chunk.subarray(0, room));
      written = maxBytes;
      file.write(
        `\n[pi-workflows: output cut here at ${maxBytes} bytes; the process was stopped]\n`,
      );
      onCut(maxBytes + chunk.length - room);
      return;
    }
    written += chunk.length;
    if (!file.write(chunk)) {
      source.pause();
      file.once("drain", () => source.resume());
    }
  });
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    file.end();
  };
  source.once("end", end);
  source.once("close", end);
  source.once("error", end);
  return { done };
}

/** Removes captured output files that stayed empty (the common case): nothing to keep. */
export function removeEmptyLogs(logFiles: { stdout: string; stderr: string }): void {
  for (const path of [logFiles.stdout, logFiles.stderr]) {
    try {
      if (statSync(path).size === 0) rmSync(path);
    } catch {
      // already gone
    }
  }
}
