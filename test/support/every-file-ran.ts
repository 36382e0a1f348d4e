/**
 * A vitest reporter that fails the run loudly when a test file it was asked to run did not run to
 * its end (a pool that timed out starting or stopping a worker, a worker that died between files).
 * vitest reports most of these as errors, but a file that is dropped without one would otherwise
 * pass unnoticed: CI must not count a run in which some file never executed.
 */
import type { Reporter, TestModule, TestRunEndReason, TestSpecification } from "vitest/node";

/**
 * A file as one project runs it: the ps pass runs some files a second time (vitest.config.ts),
 * and each run must end. `[ps] /t/a.test.ts`, or the path alone in the default project.
 */
export function plannedName(moduleId: string, project: string): string {
  return project && project !== "default" ? `[${project}] ${moduleId}` : moduleId;
}

type Ran = Pick<TestModule, "moduleId" | "state"> & { project: { name: string } };

/** The planned files (plannedName) whose module did not end passed, failed or skipped. */
export function unfinishedFiles(planned: Iterable<string>, modules: ReadonlyArray<Ran>): string[] {
  const ended = new Set(
    modules
      .filter((m) => ["passed", "failed", "skipped"].includes(m.state()))
      .map((m) => plannedName(m.moduleId, m.project.name)),
  );
  return [...planned].filter((file) => !ended.has(file)).sort();
}

export default class EveryFileRan implements Reporter {
  #planned = new Set<string>();

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>): void {
    for (const spec of specifications) {
      this.#planned.add(plannedName(spec.moduleId, spec.project.name));
    }
  }

  onTestRunEnd(
    modules: ReadonlyArray<TestModule>,
    _errors: unknown,
    reason: TestRunEndReason,
  ): void {
    if (reason === "interrupted") return;
    const missing = unfinishedFiles(this.#planned, modules);
    if (missing.length === 0) return;
    process.exitCode = 1;
    console.error(
      `\nFAILED: ${missing.length} of ${this.#planned.size} test files did not run to their end:\n` +
        missing.map((file) => `  ${file}`).join("\n") + "\n",
    );
  }
}
