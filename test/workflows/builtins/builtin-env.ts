/**
 * The headless environment the built-in tests share: the fake model and a Pi sandbox whose
 * project is a real git repository (one commit, then the test's own changes), plus small
 * helpers to start a built-in from the CLI and to wait for a run's state.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createHeadlessEnv, type HeadlessEnv } from "../../support/headless-env.ts";
import { waitFor } from "../../support/wait.ts";

export interface BuiltinEnv extends HeadlessEnv {
  git(...args: string[]): string;
  /** Writes a file under the project (directories made as needed). */
  write(path: string, text: string): void;
  /** `start <ref> --wait --json` in the project; the run record and the exit code. */
  start(
    ref: string,
    input: unknown,
    timeoutMs?: number,
  ): Promise<{ code: number | null; run: any }>;
  /** Polls `status --json` (in this process: cliHereJson) until the run is in `state`, bounded. */
  waitForState(runId: string, state: string, timeoutMs?: number): Promise<any>;
}

export async function createBuiltinEnv(): Promise<BuiltinEnv> {
  const h = await createHeadlessEnv();
  const project = h.sandbox.project;
  const git = (...args: string[]) =>
    execFileSync("git", args, { cwd: project, encoding: "utf8", env: h.env });
  git("init", "-q", "-b", "main");
  git("config", "user.email", "test@example.invalid");
  git("config", "user.name", "Test");
  const write = (path: string, text: string) => {
    mkdirSync(dirname(join(project, path)), { recursive: true });
    writeFileSync(join(project, path), text);
  };
  write("README.md", "# Demo\n\nA small demo project.\n");
  write("src/sum.ts", "export const sum = (a: number, b: number) => a + b;\n");
  git("add", "-A");
  git("commit", "-q", "-m", "initial");
  const env = h as BuiltinEnv;
  env.git = git;
  env.write = write;
  env.start = async (ref, input, timeoutMs = 120_000) => {
    const out = await h.cli([
      "start",
      ref,
      "--input-json",
      JSON.stringify(input),
      "--cwd",
      project,
      "--wait",
      "--json",
    ], timeoutMs);
    try {
      return { code: out.code, run: JSON.parse(out.stdout).run };
    } catch {
      throw new Error(`start ${ref}: exit ${out.code}: ${out.stderr}${out.stdout}`);
    }
  };
  env.waitForState = async (runId, state, timeoutMs = 90_000) => {
    let last: any = null;
    return await waitFor(
      async () => (last = (await h.cliHereJson(["status", runId])).run)?.state === state && last,
      () => `run ${runId} to reach ${state} (last: ${last?.state})`,
      timeoutMs,
      250,
    );
  };
  return env;
}
