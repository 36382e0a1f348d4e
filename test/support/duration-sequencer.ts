/**
 * vitest's sequencer (`sequence.sequencer` in vitest.config.ts): the longest files first, and the
 * files PI_WORKFLOWS_LATE_FILES names late (test/support/file-order.ts says why).
 */
import { statSync } from "node:fs";
import { resolve } from "node:path";
import { BaseSequencer, type TestSpecification } from "vitest/node";
import { fileKey, orderByDuration, readDurations, startLate } from "./file-order.ts";

export default class DurationSequencer extends BaseSequencer {
  override sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = readDurations();
    const keyOf = (spec: TestSpecification) => fileKey(spec.project.name, root, spec.moduleId);
    const ordered = orderByDuration(
      files.map((spec) => ({ item: spec, key: keyOf(spec), size: statSync(spec.moduleId).size })),
      seconds,
    );
    const lateFiles = (process.env.PI_WORKFLOWS_LATE_FILES ?? "").split(/\s+/).filter(Boolean)
      .map((path) => resolve(root, path));
    const late = new Set(ordered.filter((spec) => lateFiles.includes(spec.moduleId)));
    const workers = Number(this.ctx.config.maxWorkers) || 1;
    return Promise.resolve(startLate(ordered, late, (spec) => seconds[keyOf(spec)], workers));
  }
}
