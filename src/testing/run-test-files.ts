/**
 * What `pi-workflows test [files…]` does, with no test runner installed: find the
 * `*.workflow.test.ts` files (in the given files and directories, default the current one),
 * import each through the workflow loader's hooks (so `@osolmaz/pi-workflows`, `pi-workflows`
 * and `@osolmaz/pi-workflows/testing` resolve to this very program, inside the single
 * executable too), collect its `test()`s and run them one after another.
 */
import { readdirSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { importModule } from "../workflows/sources/import-module.ts";
import { installWorkflowHooks, publishVirtualModule } from "../workflows/sources/module-hooks.ts";
import * as kit from "./index.ts";
import { collectTests } from "./test-registry.ts";

export const TEST_FILE_SUFFIX = ".workflow.test.ts";
export const TESTING_SPECIFIERS = ["@osolmaz/pi-workflows/testing", "pi-workflows/testing"];

/** Directories never searched: dependencies, version control, build output. */
const SKIPPED_DIRS = new Set(["node_modules", ".git", "dist"]);

export interface TestOutcome {
  /** The test file, relative to the directory the search started from. */
  file: string;
  /** The test's name; null when the file itself failed to load. */
  name: string | null;
  ok: boolean;
  ms: number;
  /** The failure's message (for a missing answer: with the step's prompt). */
  error?: string;
}

/** Every test file under `targets` (files or directories), sorted; a missing target throws. */
export function findTestFiles(targets: readonly string[], cwd: string): string[] {
  const found = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name) && !entry.name.startsWith(".")) {
          walk(join(dir, entry.name));
        }
      } else if (entry.name.endsWith(TEST_FILE_SUFFIX)) found.add(join(dir, entry.name));
    }
  };
  for (const target of targets.length ? targets : ["."]) {
    const path = resolve(cwd, target);
    let stat;
    try {
      stat = statSync(path);
    } catch {
      throw new Error(`Test file or directory not found: ${target}`);
    }
    if (stat.isDirectory()) walk(path);
    else found.add(path);
  }
  return [...found].sort();
}

/** Runs every test of `files`, reporting each as it ends; returns the counts. */
export async function runTestFiles(
  files: readonly string[],
  cwd: string,
  report: (outcome: TestOutcome) => void,
): Promise<{ passed: number; failed: number }> {
  installWorkflowHooks();
  publishVirtualModule("testing", TESTING_SPECIFIERS, kit);
  let passed = 0;
  let failed = 0;
  const count = (outcome: TestOutcome) => {
    if (outcome.ok) passed++;
    else failed++;
    report(outcome);
  };
  for (const path of files) {
    const file = relative(cwd, path) || path;
    const started = performance.now();
    let tests;
    try {
      tests = await collectTests(() => importModule(pathToFileURL(path).href));
    } catch (error) {
      count({ file, name: null, ok: false, ms: elapsed(started), error: loadErrorOf(error) });
      continue;
    }
    for (const { name, fn } of tests) {
      const begun = performance.now();
      try {
        await fn();
        count({ file, name, ok: true, ms: elapsed(begun) });
      } catch (error) {
        count({ file, name, ok: false, ms: elapsed(begun), error: messageOf(error) });
      }
    }
  }
  return { passed, failed };
}

function elapsed(since: number): number {
  return Math.round(performance.now() - since);
}

/**
 * Why a test file did not load. A syntax error's message alone does not say where it is
 * (`Expected ';', '}' or <eof>`); its stack starts with the place (`<file>:<line>`, the line and a
 * caret under the fault), which is kept.
 */
function loadErrorOf(error: unknown): string {
  const message = messageOf(error);
  if (!(error instanceof SyntaxError) || !error.stack) return message;
  const place = error.stack.indexOf(`\n\n${error.name}`);
  return place > 0 ? `${clipAtCaret(error.stack.slice(0, place))}\n${message}` : message;
}

/** The longest line kept of a syntax error's place: a minified file's line would print whole. */
const MAX_LINE = 200;

/** The place's lines cut to `MAX_LINE` characters, the source line and its caret to the same window. */
function clipAtCaret(place: string): string {
  const lines = place.split("\n");
  const caretLine = lines.findIndex((line, i) => i > 0 && /^\s*\^+\s*$/.test(line));
  const from = caretLine > 0 ? Math.max(0, lines[caretLine]!.indexOf("^") - MAX_LINE / 2) : 0;
  return lines.map((line, i) => {
    const window = i === caretLine || i === caretLine - 1 ? from : 0;
    if (window === 0 && line.length <= MAX_LINE) return line;
    // The caret line keeps its column: a space where the source line shows it was cut.
    const lead = window > 0 ? (i === caretLine ? " " : "…") : "";
    return lead + line.slice(window, window + MAX_LINE) +
      (line.length > window + MAX_LINE ? "…" : "");
  }).join("\n");
}

function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // An assertion's message is the story; a stack adds only the runner's own frames.
  return error.message || error.name;
}
