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
  secrets: readonly string[] | (() => readonly string[]),
  segmentBytes = STEP_SEGMENT_BYTES,
): StepOutput {
  // A stream's file, decoder and redactor are made on its first byte, and the secrets read then:
  // most steps print nothing, and a worker may run thousands of them back to back.
  let held: readonly string[] | null = null;
  const secretsNow = () => held ??= typeof secrets === "function" ? secrets() : secrets;
  const sinks: Partial<Record<StepStream, StreamSink>> = {};
  return {
    write(stream, chunk) {
      if (chunk.length === 0) return;
      const sink = sinks[stream] ??= streamSink(
        segmentWriter(dir, attemptId, stream, segmentBytes),
        secretsNow(),
      );
      sink.write(chunk);
    },
    close() {
      for (const stream of ["stdout", "stderr"] as const) sinks[stream]?.close();
    },
  };
}

interface StreamSink {
  write(chunk: Uint8Array | string): void;
  close(): void;
}

/** One stream's text on its way to its segments: decoded whole characters, secrets redacted. */
function streamSink(
  segments: ReturnType<typeof segmentWriter>,
  secrets: readonly string[],
): StreamSink {
  const decoder = new StringDecoder("utf8");
  const redactor = createStreamRedactor(secrets);
  return {
    write(chunk) {
      const piece = typeof chunk === "string" ? chunk : decoder.write(Buffer.from(chunk));
      const out = redactor.push(piece);
      if (out !== "") segments.write(Buffer.from(out, "utf8"));
    },
    close() {
      const out = redactor.end();
      if (out !== "") segments.write(Buffer.from(out, "utf8"));
      segments.close();
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

/** Where the process's stdout and stderr are copied to now: the running step's output, if any. */
let teeTarget: StepOutput | null = null;
let teeInstalled = false;

/**
 * Copies what this process writes to its stdout and stderr into `output` until the returned
 * function is called (the writes still go where they went). The copying writes are installed
 * once per process and a step only points them at its output: steps run one at a time.
 */
export function teeProcessOutput(output: StepOutput): () => void {
  if (!teeInstalled) installTee();
  teeTarget = output;
  return () => {
    if (teeTarget === output) teeTarget = null;
  };
}

function installTee(): void {
  teeInstalled = true;
  for (const name of ["stdout", "stderr"] as const) {
    const stream = process[name];
    const original = stream.write;
    stream.write = function (this: typeof stream, chunk: unknown, ...rest: unknown[]) {
      const target = teeTarget;
      if (target !== null && (typeof chunk === "string" || chunk instanceof Uint8Array)) {
        try {
          target.write(name, chunk);
        } catch {
          // the copy never fails the write
        }
      }
      return (original as (...args: unknown[]) => boolean).call(this, chunk, ...rest);
    } as typeof stream.write;
  }
}
