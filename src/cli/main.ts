/**
 * The `pi-workflows` program. Everything the CLI does starts here, including the host (`host
 * run`) and the internal `worker` mode the host spawns. Heavy modules load lazily so `--version`
 * and `--help` stay fast.
 */
import "./quiet-warnings.ts";
import { exitQuietlyOnClosedPipe } from "./output.ts";
import { npmCallerDir } from "./project-dir.ts";
import { runCli } from "./run-cli.ts";

exitQuietlyOnClosedPipe();
// Through `npm run pi-workflows -- …`, paths and project discovery follow the caller's directory.
// Not for the host and its workers: they never take the directory from the command line.
const caller = npmCallerDir(process.env);
if (caller !== null && !["host", "worker"].includes(process.argv[2] ?? "")) process.chdir(caller);
runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
