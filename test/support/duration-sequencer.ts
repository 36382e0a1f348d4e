/**
 * vitest's sequencer (`sequence.sequencer` in vitest.config.ts): the files that failed in the last
 * run first (vitest's cache; none on a fresh clone), then the longest first
 * (test/support/file-order.ts says why).
 */
import { statSync } from "node:fs";
import { relative } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { fileKey, orderByDuration, readDurations } from "./file-order.ts";

export default class DurationSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = readDurations();
    const keyOf = (spec: TestSpecification) => fileKey(spec.project.name, root, spec.moduleId);
    // As vitest's own order does: the files that failed in this checkout's last run first.
    const failed = (spec: TestSpecification) =>
      this.ctx.cache.getFileTestResults(
        `${spec.project.name}:${relative(root, spec.moduleId)}`,
      )?.failed === true;
    return Promise.resolve([true, false].flatMap((failedFirst) =>
      orderByDuration(
        files.filter((spec) => failed(spec) === failedFirst).map((spec) => ({
          item: spec,
          key: keyOf(spec),
          size: statSync(spec.moduleId).size,
        })),
        seconds,
      )
    ));
  }
}
