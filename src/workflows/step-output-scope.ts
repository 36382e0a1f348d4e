/**
 * The step's output files for code that runs commands on its own inside a step: an action that
 * calls `runCommandBatch` gets each command's output into the step's stdout/stderr files (what
 * `pi-workflows logs` shows), each line labelled with its item id, as a shell node's command
 * output goes there. The executor opens the scope around the action; outside a step there is
 * none and nothing is copied.
 */
// The default import, read when a step first opens a scope: `AsyncLocalStorage` is an accessor
// of the built-in, which the executable's bundle does not re-export by name
// (compile/lazy-builtins.ts), and a worker that never opens a scope loads none of it.
import asyncHooks from "node:async_hooks";
import type { AsyncLocalStorage } from "node:async_hooks";
import type { OutputSink } from "./shell-runner.ts";

let scope: AsyncLocalStorage<OutputSink> | undefined;

/** Runs `fn` with `sink` as the step's output (none: runs it as it is). */
export function withStepOutput<T>(sink: OutputSink | undefined, fn: () => T): T {
  if (!sink) return fn();
  scope ??= new asyncHooks.AsyncLocalStorage<OutputSink>();
  return scope.run(sink, fn);
}

/**
 * A sink for one command of a batch: whole lines, each as `[<id>] line`, so concurrent commands
 * never mix inside a line; null outside a step. `flush` writes what is left of a last line.
 */
export function labelledStepOutput(
  label: string,
): { write: OutputSink; flush(): void } | null {
  const sink = scope?.getStore();
  if (!sink) return null;
  const decoder = { stdout: new TextDecoder(), stderr: new TextDecoder() };
  const rest = { stdout: "", stderr: "" };
  const emit = (stream: "stdout" | "stderr", text: string) => {
    try {
      sink(stream, new TextEncoder().encode(text));
    } catch {
      // a copy for logs never fails the command
    }
  };
  return {
    write(stream, chunk) {
      const lines = (rest[stream] + decoder[stream].decode(chunk, { stream: true })).split("\n");
      rest[stream] = lines.pop()!;
      if (lines.length > 0) emit(stream, lines.map((l) => `[${label}] ${l}\n`).join(""));
    },
    flush() {
      for (const stream of ["stdout", "stderr"] as const) {
        const last = rest[stream] + decoder[stream].decode();
        rest[stream] = "";
        if (last !== "") emit(stream, `[${label}] ${last}\n`);
      }
    },
  };
}
