/**
 * The 0.12 error-comparison check (../error-compare-012.ts) over the text of every file a load
 * read, so a comparison in a module-level helper or a controller's `ensure` record is refused at
 * load too, not only one written inside a definition's callback.
 */
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { ERROR_STRING_COMPARISON, findErrorComparisonInText } from "../error-compare-012.ts";
import { WorkflowLoadError } from "../errors.ts";

/** Throws `invalidDefinition` naming the first file and line that compares an error as a string. */
export function refuseErrorStringComparisons(paths: Iterable<string>): void {
  for (const path of [...paths].sort()) {
    let text: string;
    try {
      text = readFileSync(path, "utf8");
    } catch {
      continue; // Gone since it loaded: its identity check reports that.
    }
    const found = findErrorComparisonInText(text);
    if (found !== null) {
      throw new WorkflowLoadError(
        "invalidDefinition",
        `${basename(path)}: ${found} ${ERROR_STRING_COMPARISON}`,
        path,
      );
    }
  }
}
