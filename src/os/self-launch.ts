/**
 * The command that starts this same program with other arguments: the host uses it for
 * `worker` children and `host start` uses it for `host run`. Three forms:
 * - inside the compiled single executable: the executable itself;
 * - under Deno: `deno run -A <entry>`;
 * - under Node from source or from the bundle: `node [execArgv...] <entry>`.
 * The entry is the CLI main, found from this module's own location rather than from
 * `process.argv[1]`, which belongs to whatever started the process (a test runner, a REPL).
 */
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

export interface SelfCommand {
  command: string;
  args: string[];
}

export type RuntimeKind = "sea" | "deno" | "node";

export interface SelfCommandOptions {
  /** Overrides runtime detection (tests). */
  runtime?: RuntimeKind;
  /** Overrides the entry file (tests, or an embedder with its own main). */
  entry?: string;
}

/** Node flags that must not be passed on: they would attach a debugger or run other code. */
const DROPPED_EXEC_ARGS =
  /^--(inspect|inspect-brk|inspect-port|inspect-wait|debug-port|eval|print|test|watch|input-type)(=|$)|^-[ep]$/;

export function selfCommand(args: string[], options: SelfCommandOptions = {}): SelfCommand {
  const runtime = options.runtime ?? detectRuntime();
  if (runtime === "sea") return { command: process.execPath, args: [...args] };
  const main = options.entry ?? selfEntry();
  // The worker modes start from the worker-only entry when there is one: a smaller module graph
  // (source) or file (bundle) to load before `worker.ready`.
  const entry = args[0] === "worker" ? workerEntry(main) : main;
  if (runtime === "deno") return { command: process.execPath, args: ["run", "-A", entry, ...args] };
  return { command: process.execPath, args: [...nodeExecArgs(), entry, ...args] };
}

/** The file name of the worker-only bundle, written beside the CLI bundle (compile/build.ts). */
export const WORKER_BUNDLE_NAME = "pi-workflows-worker.mjs";

/**
 * The worker-only entry for the CLI entry `main`: `src/cli/worker-main.ts` beside a source
 * `main.ts`, the worker bundle beside a CLI bundle; `main` itself when there is none.
 */
export function workerEntry(main: string): string {
  const candidate = /[\\/]src[\\/]cli[\\/]main\.ts$/.test(main)
    ? join(dirname(main), "worker-main.ts")
    : join(dirname(main), WORKER_BUNDLE_NAME);
  return existsSync(candidate) ? candidate : main;
}

export function detectRuntime(): RuntimeKind {
  if ("Deno" in globalThis) return "deno";
  const sea = process.getBuiltinModule?.("node:sea") as { isSea(): boolean } | undefined;
  if (sea?.isSea()) return "sea";
  return "node";
}

/**
 * The CLI entry. From source this module is `src/os/self-launch.ts` and the entry is
 * `src/cli/main.ts`; in the bundle every module shares one file, which is itself the entry.
 */
export function selfEntry(moduleUrl: string = import.meta.url): string {
  const here = fileURLToPath(moduleUrl);
  if (!/[\\/]src[\\/]os[\\/]self-launch\.ts$/.test(here)) return here;
  const main = fileURLToPath(new URL("../cli/main.ts", moduleUrl));
  if (!existsSync(main)) {
    throw new Error(`Self-launch failed: the CLI entry is missing: expected ${main}`);
  }
  return main;
}

/** The parent's Node flags (e.g. `--conditions`, `--max-old-space-size`), minus unsafe ones. */
function nodeExecArgs(): string[] {
  const kept: string[] = [];
  const source = process.execArgv;
  for (let i = 0; i < source.length; i++) {
    const arg = source[i];
    if (DROPPED_EXEC_ARGS.test(arg)) {
      // `-e code` / `--eval code` take the next argument as their value.
      if (/^(-e|-p|--eval|--print|--input-type)$/.test(arg)) i++;
      continue;
    }
    kept.push(arg);
  }
  return kept;
}
