/**
 * The `pi-workflows` program. Everything the CLI does starts here, including the host (`host
 * run`) and the internal `worker` mode the host spawns. Heavy modules load lazily so `--version`
 * and `--help` stay fast.
 */
import "./quiet-warnings.ts";
import { exitQuietlyOnClosedPipe } from "./output.ts";
import { npmCallerDir } from "./project-dir.ts";

exitQuietlyOnClosedPipe();
// Through `npm run pi-workflows -- …`, paths and project discovery follow the caller's directory.
// Not for the host and its workers: they never take the directory from the command line.
const caller = npmCallerDir(process.env);
if (caller !== null && !["host", "worker"].includes(process.argv[2] ?? "")) process.chdir(caller);
const argv = process.argv.slice(2);
// A completion script runs `__complete` at each <Tab>: it skips the command parser, which loads
// every command's options and schemas (most of such a Node start's CPU when run from source).
const run = argv[0] === "__complete"
  ? import("./completion-command.ts").then((c) => c.runCompletionRequest(argv.slice(1)))
  : import("./run-cli.ts").then((c) => c.runCli(argv));
run.then((code) => {
  process.exitCode = code;
});
