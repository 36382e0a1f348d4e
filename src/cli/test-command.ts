/**
 * `pi-workflows test [files…]`: runs `*.workflow.test.ts` files with the test kit, no test
 * runner needed (src/testing/run-test-files.ts), one line per test, then the summary line
 * `N passed, N failed`. Exit 0 when every test passed, 1 when one failed or none was found.
 */
import { findTestFiles, runTestFiles } from "../testing/run-test-files.ts";
import { PLAIN_STYLE } from "./cli-style.ts";
import { EXIT } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";

export async function runTestCommand(
  command: { files: string[] },
  io: CliIo,
  cwd: string = process.cwd(),
): Promise<number> {
  const style = io.style ?? PLAIN_STYLE;
  const files = findTestFiles(command.files, cwd);
  if (files.length === 0) {
    io.err(`No *.workflow.test.ts files found in ${command.files.join(", ") || "."}`);
    return EXIT.failure;
  }
  const { passed, failed } = await runTestFiles(files, cwd, (outcome) => {
    const title = outcome.name === null
      ? `${outcome.file} (could not load)`
      : `${outcome.file} › ${outcome.name}`;
    const glyph = outcome.ok
      ? style.paint("ok", style.glyph("ok"))
      : style.paint("failed", style.glyph("failed"));
    io.out(`${glyph} ${style.text(title)} ${style.paint("muted", `(${outcome.ms} ms)`)}`);
    if (outcome.error !== undefined) io.out(indent(outcome.error));
  });
  const summary = `${passed} passed, ${failed} failed`;
  io.out(failed > 0 ? style.paint("failed", summary) : style.paint("ok", summary));
  return failed > 0 || passed === 0 ? EXIT.failure : EXIT.ok;
}

function indent(text: string): string {
  return text.split("\n").map((line) => `    ${line}`).join("\n");
}
