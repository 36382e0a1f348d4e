/**
 * Writes what one attempt prints (base/step-output-files.ts names and reads the files): the
 * chunks of a shell node's command, and what the worker's own stdout and stderr get while the
 * step runs (an action's or compute's code). Secrets the worker holds are redacted before a byte
 * reaches the disk. Files are opened on the first byte, so a step that prints nothing costs
 * nothing; write errors are swallowed (a full disk must not fail the step).
 */
import { Buffer } from "node:buffer";
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from "node:fs";
import { StringDecoder } from "node:string_decoder";
import { STEP_SEGMENT_BYTES, stepSegmentPath, type StepStream } from "../base/step-output-files.ts";
import { createStreamRedactor } from "./secret-values.ts";

export interface StepOutput {
  write(stream: StepStream, chunk: Uint8Array | string): void;
  /** Flushes what redaction held back and closes the files. */
  close(): void;
}

export function createStepOutput(
  dir: string,
  attemptId: string,
  secrets: readonly string[],
  segmentBytes = STEP_SEGMENT_BYTES,
): StepOutput {
  const streams = {
    stdout: segmentWriter(dir, attemptId, "stdout", segmentBytes),
    stderr: segmentWriter(dir, attemptId, "stderr", segmentBytes),
  };
  const text = {
    stdout: { decoder: new StringDecoder("utf8"), redactor: createStreamRedactor(secrets) },
    stderr: { decoder: new StringDecoder("utf8"), redactor: createStreamRedactor(secrets) },
  };
  return {
    write(stream, chunk) {
      const t = text[stream];
      const piece = typeof chunk === "string" ? chunk : t.decoder.write(Buffer.from(chunk));
      const out = t.redactor.push(piece);
      if (out !== "") streams[stream].write(Buffer.from(out, "utf8"));
    },
    close() {
      for (const stream of ["stdout", "stderr"] as const) {
        const out = text[stream].redactor.end();
        if (out !== "") streams[stream].write(Buffer.from(out, "utf8"));
        streams[stream].close();
      }
    },
  };
}

/** One stream's numbered segments: a new one past `segmentBytes`, the one before last removed. */
function segmentWriter(dir: string, attemptId: string, stream: StepStream, segmentBytes: number) {
  let fd: number | null = null;
  let segment = 0;
  let size = 0;
  let broken = false;
  const open = () => {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    fd = openSync(stepSegmentPath(dir, attemptId, stream, segment), "a", 0o600);
  };
  return {
    write(bytes: Uint8Array) {
      if (broken || bytes.length === 0) return;
      try {
        if (fd === null) open();
        if (size > 0 && size + bytes.length > segmentBytes) {
          closeSync(fd!);
          segment++;
          size = 0;
          if (segment >= 2) {
            rmSync(stepSegmentPath(dir, attemptId, stream, segment - 2), { force: true });
          }
          open();
        }
        writeSync(fd!, bytes);
        size += bytes.length;
      } catch {
        broken = true;
      }
    },
    close() {
      if (fd === null) return;
      try {
        closeSync(fd);
      } catch {
        // already closed
      }
      fd = null;
    },
  };
}

/**
 * Copies what this process writes to its stdout and stderr into `output` until the returned
 * function is called (the writes still go where they went).
 */
export function teeProcessOutput(output: StepOutput): () => void {
  const undo: (() => void)[] = [];
  for (const name of ["stdout", "stderr"] as const) {
    const stream = process[name];
    const original = stream.write;
    stream.write = function (this: typeof stream, chunk: unknown, ...rest: unknown[]) {
      if (typeof chunk === "string" || chunk instanceof Uint8Array) {
        try {
          output.write(name, chunk);
        } catch {
          // the copy never fails the write
        }
      }
      return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof stream.write;
    undo.push(() => stream.write = original);
  }
  return () => {
    for (const restore of undo) restore();
  };
}
