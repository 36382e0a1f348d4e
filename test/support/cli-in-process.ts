/**
 * The CLI run in the test's own process through its entry function (`runCli`, what
 * src/cli/main.ts calls), its output captured as a child's would be: for a test that needs the
 * test's clock (fake timers) around a command, where a child process would wait in real time.
 */
import { runCli } from "../../src/cli/run-cli.ts";

export async function runCliInProcess(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = "";
  let stderr = "";
  // As the process's own output does: every line ends with a newline.
  const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
  const code = await runCli(args, {
    out: (text) => void (stdout += line(text)),
    err: (text) => void (stderr += line(text)),
  }, env);
  return { code, stdout, stderr };
}
