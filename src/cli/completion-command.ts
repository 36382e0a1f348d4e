/**
 * `pi-workflows completion bash|zsh` prints a completion script; the script calls back the
 * hidden `pi-workflows __complete workflows|runs [--active]` for what changes (workflow names in
 * this directory, run ids). Commands and options come from the help texts (usage.ts), so a
 * command's documented options are what completes. Completing never starts a host: with none
 * running, run ids simply do not complete.
 */
import { exitCodeFor, UsageError } from "./exit-codes.ts";
import { type CliIo, oneLineError, processIo } from "./output.ts";

export type CompletionCommand =
  | { kind: "completion"; shell: "bash" | "zsh" }
  | { kind: "completion"; words: "workflows" | "runs"; active: boolean };

export function parseCompletion(
  name: "completion" | "__complete",
  rest: readonly string[],
): CompletionCommand | { kind: "help"; topic: string } {
  if (name === "__complete") return parseCompleteRequest(rest);
  const [shell, ...more] = rest;
  if (shell === "--help" || shell === "-h") return { kind: "help", topic: "completion" };
  if (shell !== "bash" && shell !== "zsh") {
    throw new UsageError(
      shell === undefined
        ? "Missing shell for 'completion': use bash or zsh (pi-workflows completion --help)"
        : `Unknown shell '${shell.slice(0, 40)}' for 'completion': use bash or zsh`,
    );
  }
  if (more.length > 0) {
    throw new UsageError(`Unexpected argument '${more[0].slice(0, 60)}' for 'completion'`);
  }
  return { kind: "completion", shell };
}

/** `__complete workflows|runs [--active]`: what the scripts ask for. */
function parseCompleteRequest(rest: readonly string[]): CompletionCommand {
  const [what, flag] = rest;
  if (what === "workflows" || what === "runs") {
    return { kind: "completion", words: what, active: flag === "--active" };
  }
  throw new UsageError("Unknown completion request: use 'workflows' or 'runs'");
}

export async function runCompletionCommand(
  command: CompletionCommand,
  io: CliIo,
  env: NodeJS.ProcessEnv,
): Promise<number> {
  if ("shell" in command) {
    const { completionScript } = await import("./completion-script.ts");
    io.out(completionScript(command.shell));
    return 0;
  }
  const { completeWords } = await import("./complete-words.ts");
  for (const line of await completeWords(command.words, command.active, env)) io.out(line);
  return 0;
}

/** `pi-workflows __complete …` as main.ts runs it, without the command parser (runCli's errors). */
export async function runCompletionRequest(
  rest: readonly string[],
  io: CliIo = processIo,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  try {
    return await runCompletionCommand(parseCompleteRequest(rest), io, env);
  } catch (error) {
    io.err(oneLineError(error));
    return exitCodeFor(error);
  }
}
