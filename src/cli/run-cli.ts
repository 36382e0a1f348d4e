/**
 * Runs one CLI invocation: parse, dispatch, print, and return the exit code. Every failure ends
 * as one line on stderr and a documented exit code (exit-codes.ts), never a stack trace.
 */
import { EXIT, exitCodeFor } from "./exit-codes.ts";
import { type CliIo, oneLineError, processIo } from "./output.ts";
import { parseCommand } from "./parse-command.ts";
import { COMMAND_HELP, MAIN_HELP } from "./usage.ts";
import { buildInfo, versionJson, versionText } from "../base/build-info.ts";

export { exitCodeFor };

export async function runCli(
  argv: readonly string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  try {
    const command = parseCommand(argv);
    switch (command.kind) {
      case "help":
        io.out(command.topic === null ? MAIN_HELP : COMMAND_HELP[command.topic]);
        return EXIT.ok;
      case "version":
        io.out(command.json ? versionJson(buildInfo()) : versionText());
        return EXIT.ok;
      case "worker": {
        const { runWorkerCommand } = await import("./worker-command.ts");
        return await runWorkerCommand(command.args);
      }
      case "host": {
        const { runHostCommand } = await import("./host-command.ts");
        return await runHostCommand(command, io, env);
      }
      case "view": {
        const { runViewCommand } = await import("./view-command.ts");
        return await runViewCommand(command, env, io);
      }
      case "controller": {
        const { runControllerCommand } = await import("./controller-command.ts");
        return await runControllerCommand(command, io, env);
      }
      case "schedule": {
        const { runScheduleCommand } = await import("./schedule-command.ts");
        return await runScheduleCommand(command, io, env);
      }
      case "completion": {
        const { runCompletionCommand } = await import("./completion-command.ts");
        return await runCompletionCommand(command, io, env);
      }
      case "prune": {
        const { runPruneCommand } = await import("./prune-command.ts");
        return await runPruneCommand(command, io, env);
      }
      case "doctor": {
        const { runDoctorCommand } = await import("./doctor-command.ts");
        return await runDoctorCommand(command, io, env);
      }
      case "schema": {
        const { runSchemaCommand } = await import("./schema-command.ts");
        return runSchemaCommand(command, io);
      }
      case "logs": {
        const { runLogsCommand } = await import("./logs-command.ts");
        return await runLogsCommand(command, io, env);
      }
      case "rerun": {
        const { runRerunCommand } = await import("./rerun-command.ts");
        return await runRerunCommand(command, io, env);
      }
      case "test": {
        const { runTestCommand } = await import("./test-command.ts");
        return await runTestCommand(command, io);
      }
      case "workflows": {
        const { runWorkflowsCommand } = await import("./workflows-command.ts");
        return await runWorkflowsCommand(command, io, env);
      }
      default: {
        const { runRunCommand } = await import("./run-command.ts");
        return await runRunCommand(command, io, env);
      }
    }
  } catch (error) {
    io.err(oneLineError(error));
    return exitCodeFor(error);
  }
}
