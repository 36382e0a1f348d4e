import { availableParallelism } from "node:os";
import { configDefaults, defineConfig, type TestProjectInlineConfiguration } from "vitest/config";
import DurationSequencer from "./test/support/duration-sequencer.ts";
import { SHARED_FILES } from "./test/support/shared-files.ts";

// CLI glyphs follow the locale (ASCII unless it says UTF-8): tests see the UTF-8 set unless a
// test sets its own locale for a child process.
const utf8 = /utf-?8/i.test(process.env.LC_ALL || process.env.LC_CTYPE || process.env.LANG || "");
const env: Record<string, string> = utf8 ? {} : { LC_ALL: "C.UTF-8" };

/**
 * The files that run a second time under the portable `ps` process backend (src/os/), which
 * macOS uses, when PI_WORKFLOWS_PS_PASS=1 (as `npm test` sets it). Only the process-table reads
 * differ by backend (a process's liveness, its start identity, its group's members), so the pass
 * runs what exercises them: the process-identity, reaping, memory-cap and client-identity tests,
 * and one real crash file per kind of process the host or a client identifies by its start
 * (host: takeover-time and host-death-shell; run worker: worker-crash, its command groups:
 * shell-groups; prepared process: prepared-crash; validation child: interaction-crash;
 * controller worker: controller-crash; Pi: headless-crash). The other crash files (host-crash,
 * command-takeover, rerun, schedule, decision-deadline and outbox crashes, managed effects, a
 * Pi's own death, interaction ops) recover through those same reads, which the files here cover
 * under `ps`; they run under the platform's backend only. So do the extension's e2e tests in the
 * real Pi (test/pi/interactive, restarts): the host never reads an interactive Pi's process, and
 * the processes it does read there (the host's claim, run workers, validation children, the
 * start lock) are the ones takeover-time, worker-crash, interaction-crash and start-lock cover
 * under `ps`; a second pass of those two files cost ~110 s of CI. Within a file here, crash points
 * that vary only what was committed, with the kill and recovery of another case of the file, run
 * under the platform's backend only (test/support/ps-pass.ts). Every host, worker and Pi child
 * a file starts inherits the variable. A plain `vitest run <file>` runs the platform's backend only.
 * test/os/ and the child kit's test are not here: they name the backend they exercise
 * (pid-reuse runs each case under both).
 */
export const PS_PASS_FILES = [
  "test/crash/{takeover-time,host-death-shell,worker-crash,shell-groups}.test.ts",
  "test/crash/{prepared-crash,interaction-crash,controller-crash}.test.ts",
  "test/worker/headless-parts.test.ts",
  "test/host/supervision/{child-groups,process-identity,recovery}.test.ts",
  "test/host/runs/worker-limits.test.ts",
  "test/client/{client-identity,start-lock}.test.ts",
  "test/pi/headless-crash.test.ts",
];

// What every file needs, in the default project and the ps pass alike.
const fileOptions: {
  exclude: string[];
  testTimeout: number;
  hookTimeout: number;
  pool: "forks";
} = {
  // `*.workflow.test.ts` files are the test kit's (run by `pi-workflows test`), not vitest's.
  exclude: [...configDefaults.exclude, "**/*.workflow.test.ts"],
  testTimeout: 60_000,
  hookTimeout: 60_000,
  pool: "forks",
};

const psPass = process.env.PI_WORKFLOWS_PS_PASS === "1";
const projects: TestProjectInlineConfiguration[] = [
  {
    test: {
      ...fileOptions,
      name: "default",
      include: ["test/**/*.test.ts"],
      exclude: [...fileOptions.exclude, ...SHARED_FILES],
      env,
    },
  },
  // In-process unit tests, one process per worker for all of them (test/support/shared-files.ts).
  { test: { ...fileOptions, name: "shared", include: SHARED_FILES, isolate: false, env } },
  {
    test: {
      ...fileOptions,
      name: "ps",
      include: PS_PASS_FILES,
      env: { ...env, PI_WORKFLOWS_PROCESS_BACKEND: "ps" },
    },
  },
];

export default defineConfig({
  test: {
    ...fileOptions,
    include: ["test/**/*.test.ts"],
    env,
    // The default output, and a run that fails loudly when any test file did not run to its end.
    reporters: ["default", "./test/support/every-file-ran.ts"],
    // Two files at a time even on 2 cores (vitest's default is cores - 1 = 1 there): most of a file's
    // time is spent waiting on the host, worker and Pi processes it starts, not on CPU.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // One run, one pool: the ps pass's files share the workers with everything else.
    ...(psPass ? { projects } : {}),
    // The longest files first, by the durations of a whole run (test/support/file-order.ts), both
    // projects' files in one order: the two workers then end together.
    sequence: { sequencer: DurationSequencer },
  },
});
