/**
 * The 0.12 error-comparison check (../error-compare-012.ts) over the text of every file a load
 * read, so a comparison in a module-level helper or a controller's `ensure` record is refused at
 * load too, not only one written inside a definition's callback.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import {
  ERROR_STRING_COMPARISON,
  findErrorComparisonInText,
  readsResultsIn,
} from "../error-compare-012.ts";
import { WorkflowLoadError } from "../errors.ts";

/**
 * Throws `invalidDefinition` naming the first file and line that compares an error as a string.
 * When any file of the load reads result records, every file is checked: a helper in an imported
 * local file (`lib.ts`) may be handed one without naming `results` itself.
 */
export function refuseErrorStringComparisons(paths: Iterable<string>): void {
  const texts: [string, string][] = [];
  for (const path of [...paths].sort()) {
    try {
      texts.push([path, readFileSync(path, "utf8")]);
    } catch {
      // Gone since it loaded: its identity check reports that.
    }
  }
  const readsResults = texts.some(([, text]) => readsResultsIn(text));
  for (const [path, text] of texts) {
    const found = findErrorComparisonInText(text, readsResults);
    if (found !== null) {
      throw new WorkflowLoadError(
        "invalidDefinition",
        `${basename(path)}: ${found} ${ERROR_STRING_COMPARISON}`,
        path,
      );
    }
  }
}
