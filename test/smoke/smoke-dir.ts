/**
 * The temp directory a smoke runs in (a HOME, a state dir and a project with the workflows),
 * and the one-line report the smoke programs print.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface SmokeDir {
  root: string;
  home: string;
  stateDir: string;
  project: string;
}

export interface ScenarioReport {
  label: string;
  ok: boolean;
  steps: string[];
  error?: string;
  helloMs?: number;
  headlessMs?: number;
  recoveryMs?: number;
}

/** An empty temp dir with a HOME, a state dir and a project holding the smoke's workflows. */
export function makeSmokeDir(label: string): SmokeDir {
  const root = mkdtempSync(join(tmpdir(), `piw-smoke-${label}-`));
  const home = join(root, "home");
  const stateDir = join(home, "state");
  const project = join(root, "project");
  mkdirSync(join(project, "lib"), { recursive: true });
  mkdirSync(home, { recursive: true });
  const copies: Array<[string, string]> = [
    ["examples/hello.workflow.ts", "hello.workflow.ts"],
    ["examples/two-turn-agent.workflow.ts", "two-turn-agent.workflow.ts"],
    ["examples/lib/greet.ts", "lib/greet.ts"],
    ["test/smoke/fixtures/slow.workflow.ts", "slow.workflow.ts"],
    ["test/smoke/fixtures/smoke.workflow.test.ts", "smoke.workflow.test.ts"],
    ["test/smoke/fixtures/lib/smoke-helpers.ts", "lib/smoke-helpers.ts"],
  ];
  for (const [from, to] of copies) copyFileSync(join(REPO_ROOT, from), join(project, to));
  // The short specifier, which tsc cannot resolve inside this repository, so written here.
  writeFileSync(
    join(project, "bare.workflow.ts"),
    'import { compute, defineWorkflow } from "pi-workflows";\n' +
      'export default defineWorkflow({ name: "bare", startAt: "only", nodes: { only: compute({ run: () => ({ bare: true }) }) }, edges: [] });\n',
  );
  return { root, home, stateDir, project };
}

/** Removes the smoke dir; kept when `PI_WORKFLOWS_SMOKE_KEEP=1` for a look at the logs. */
export function removeSmokeDir(dir: SmokeDir): void {
  if (process.env.PI_WORKFLOWS_SMOKE_KEEP === "1") return;
  rmSync(dir.root, { recursive: true, force: true });
}

/** Prints the report as one JSON line and sets the exit code. */
export function finish(report: ScenarioReport, extra: Record<string, unknown> = {}): void {
  console.log(JSON.stringify({ ...report, ...extra }));
  if (!report.ok) process.exitCode = 1;
}

export function packageVersion(): string {
  return JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")).version;
}
