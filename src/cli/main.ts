/**
 * The `pi-workflows` program. Everything the CLI does starts here, including the host (`host
 * run`) and the internal `worker` mode the host spawns. Heavy modules load lazily so `--version`
 * and `--help` stay fast.
 */
import "./quiet-warnings.ts";
import { exitQuietlyOnClosedPipe } from "./output.ts";
import { runCli } from "./run-cli.ts";

exitQuietlyOnClosedPipe();
runCli(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
