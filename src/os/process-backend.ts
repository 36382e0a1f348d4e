/**
 * Which process backend this process uses: `/proc` on Linux (exact start ticks, no other
 * process), `ps` everywhere else (macOS, the BSDs, a Linux without /proc).
 * `PI_WORKFLOWS_PROCESS_BACKEND=ps` (or `proc`) forces one; the host hands its choice to every
 * child it starts, so a worker names its processes the way its host reads them.
 */
import * as v from "valibot";
import { procTable, readProcStat } from "./proc-table.ts";
import { type ProcessTable, ProcessTableUnavailable } from "./process-table.ts";
import { createPsTableSource, type PsTableSource, readPsTableNow } from "./ps-table.ts";

export const PROCESS_BACKEND_ENV = "PI_WORKFLOWS_PROCESS_BACKEND";

export type ProcessBackendName = "proc" | "ps";

export interface ProcessBackend {
  readonly name: ProcessBackendName;
  /** A view of the process table; `fresh` when a signal depends on it (see ps-table.ts). */
  table(options?: { fresh?: boolean }): Promise<ProcessTable>;
  /**
   * A table that holds at least `pid`, read before returning: `/proc` at once, `ps -p PID`
   * bounded by a short timeout; null when it cannot be read. For the few callers that must
   * answer synchronously (see `identifyChildNow`).
   */
  tableOfNow(pid: number): ProcessTable | null;
}

const BackendName = v.picklist(["proc", "ps"], "expected proc or ps");

/**
 * The backend `env` asks for, or the platform's own. A bad value is a one-line `RangeError`
 * naming the variable; `proc` where /proc cannot be read is one too.
 */
export function chooseProcessBackend(
  env: Record<string, string | undefined> = process.env,
  platform: string = process.platform,
  hasProc: () => boolean = () => readProcStat(process.pid) !== null,
): ProcessBackendName {
  const raw = env[PROCESS_BACKEND_ENV]?.trim();
  if (raw === undefined || raw === "") return platform === "linux" && hasProc() ? "proc" : "ps";
  const parsed = v.safeParse(BackendName, raw);
  if (!parsed.success) {
    throw new RangeError(
      `Invalid ${PROCESS_BACKEND_ENV}: ${parsed.issues[0].message}, got ${
        JSON.stringify(raw.slice(0, 40))
      }`,
    );
  }
  if (parsed.output === "proc" && !hasProc()) {
    throw new RangeError(`Invalid ${PROCESS_BACKEND_ENV}: proc needs a readable /proc; use ps`);
  }
  return parsed.output;
}

export function procBackend(): ProcessBackend {
  return { name: "proc", table: () => Promise.resolve(procTable), tableOfNow: () => procTable };
}

export function psBackend(source: PsTableSource = createPsTableSource()): ProcessBackend {
  return {
    name: "ps",
    table: (options) => source.table(options),
    tableOfNow: (pid) => readPsTableNow(pid),
  };
}

let current: ProcessBackend | null = null;

function byName(name: ProcessBackendName): ProcessBackend {
  return name === "proc" ? procBackend() : psBackend();
}

/** This process's backend, chosen on first use. */
export function processBackend(): ProcessBackend {
  current ??= byName(chooseProcessBackend());
  return current;
}

/** Replaces the backend (tests, the bench); returns a function that puts the old one back. */
export function useProcessBackend(backend: ProcessBackend): () => void {
  const previous = current;
  current = backend;
  return () => {
    current = previous;
  };
}

/**
 * Why this platform cannot host runs, or null. Windows has no process groups or POSIX signals
 * (WSL2 runs the Linux build); elsewhere the backend must read the process table once.
 */
export async function processBackendUnsupported(
  platform: string = process.platform,
  env: Record<string, string | undefined> = process.env,
): Promise<string | null> {
  if (platform === "win32") {
    return "pi-workflows does not support Windows yet: run it inside WSL2 (the Linux build works there)";
  }
  let backend: ProcessBackend;
  try {
    const name = chooseProcessBackend(env, platform);
    // A backend already in use (or put in place by a test) stays: children inherit its name.
    backend = current ??
      (env[PROCESS_BACKEND_ENV]?.trim() ? byName(name) : processBackend());
  } catch (error) {
    return (error as Error).message;
  }
  try {
    const table = await backend.table({ fresh: true });
    if (table.stat(process.pid) === null) {
      return `The process table (${backend.name}) does not show this process: the host could not tell its workers apart`;
    }
  } catch (error) {
    if (!(error instanceof ProcessTableUnavailable)) throw error;
    return `The host cannot read the process table: ${error.message} (install ps, e.g. the procps package)`;
  }
  current ??= backend;
  return null;
}
