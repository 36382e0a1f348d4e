/**
 * The pruned runs' output files in the workers directory (captured worker output
 * `<epoch>.out`, `<epoch>-pi<n>.err`; step output `step-<attempt>.<k>.out|err`), found through
 * one listing of the directory per retention pass: the pass hands its deleted runs over at each
 * of its checkpoints (3,457 times in a 100,000-run prune), and listing a directory of thousands
 * of files each time blocked the host's thread for it. The listing is taken at the first
 * hand-over with files to remove; a file written after it belongs to a run that is still there
 * (a pruned run ended long before the pass), so it is never one of those.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { stepOutputStem } from "../base/step-output-files.ts";

export interface OutputFileIndex {
  /** Removes the files of these worker epochs and attempts. */
  remove(epochs: readonly string[], attempts: readonly string[]): void;
}

/** The stem an epoch's captured output files are named by. */
const epochStem = (epoch: string) => epoch.replace(/[^A-Za-z0-9_.-]/g, "_");

export function outputFileIndex(dir: string): OutputFileIndex {
  /** File names by stem (an epoch's, or a step's `step-<attempt>`), once listed. */
  let byStem: Map<string, string[]> | null = null;
  const list = (): Map<string, string[]> => {
    const index = new Map<string, string[]>();
    let names: string[] = [];
    try {
      names = readdirSync(dir);
    } catch {
      // no workers directory: nothing to remove
    }
    for (const name of names) {
      const step = /^(step-.+)\.\d+\.(out|err)$/.exec(name);
      const stem = step ? step[1]! : name.replace(/(-pi\d+)?\.(out|err)$/, "");
      if (stem === name) continue;
      const files = index.get(stem);
      if (files) files.push(name);
      else index.set(stem, [name]);
    }
    return index;
  };
  const removeStem = (index: Map<string, string[]>, stem: string) => {
    for (const name of index.get(stem) ?? []) {
      try {
        rmSync(join(dir, name));
      } catch {
        // already gone
      }
    }
    index.delete(stem);
  };
  return {
    remove(epochs, attempts) {
      if (epochs.length === 0 && attempts.length === 0) return;
      byStem ??= list();
      for (const epoch of epochs) removeStem(byStem, epochStem(epoch));
      for (const attempt of attempts) removeStem(byStem, stepOutputStem(attempt));
    },
  };
}
