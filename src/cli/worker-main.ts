/**
 * `pi-workflows worker ...` as a program of its own. The single executable runs it instead of
 * main.ts when its first argument is `worker` (compile/sea-launcher.ts), so each worker the host
 * spawns loads, deserializes and initializes only the worker's part of the CLI. It does what
 * `runCli(["worker", ...args])` does: the same command, one-line errors and exit codes.
 * (`worker --help` still goes through main.ts, which owns the usage text.)
 */
import "./quiet-warnings.ts";
import { exitCodeFor } from "./exit-codes.ts";
import { oneLineError, processIo } from "./output.ts";
import { runWorkerCommand } from "./worker-command.ts";

// argv: [runtime, script, "worker", ...worker arguments]
runWorkerCommand(process.argv.slice(3)).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    processIo.err(oneLineError(error));
    process.exitCode = exitCodeFor(error);
  },
);
