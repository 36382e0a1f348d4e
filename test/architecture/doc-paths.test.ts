/**
 * Every repository path a doc names exists: a path in backticks (`src/state/claims.ts`,
 * `transitions/run-end.ts`) and every relative Markdown link, in the README, the CHANGELOG and
 * docs/. A path is found at the repository root, beside the doc, or as the tail of a tracked
 * file's path (docs name files relative to their folder). Paths of user files (`./lib/x.ts`,
 * `~/.pi/...`) and of state-directory files are not the repository's and are skipped: only paths
 * whose first folder is one the repository has are checked.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../support/host.ts";

const tracked = repositoryFiles();
const folders = new Set(tracked.flatMap((p) => p.split("/").slice(0, -1)));
const docs = [
  "README.md",
  "CHANGELOG.md",
  ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`),
];

const CODE_PATH = /`([A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)+\.(?:ts|mjs|js|md|json|sql|sh))`/g;
const LINK = /\]\(((?![a-z]+:)[^)#\s]+)(?:#[^)]*)?\)/g;

/**
 * The repository's files: git's list, or, in a copy without git (an unpacked snapshot), every
 * file but the ignored folders (.gitignore's).
 */
function repositoryFiles(): string[] {
  try {
    return execFileSync("git", ["ls-files"], { cwd: ROOT, encoding: "utf8", stdio: "pipe" })
      .trim().split("\n");
  } catch {
    const ignored = /^(node_modules|dist|release|\.deno|\.cache|\.git)(\/|$)/;
    return readdirSync(ROOT, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
      .filter((path) => !ignored.test(path));
  }
}

function exists(doc: string, path: string): boolean {
  return existsSync(join(ROOT, path)) || existsSync(join(ROOT, dirname(doc), path)) ||
    tracked.some((t) => t.endsWith(`/${normalize(path)}`));
}

describe("doc paths", () => {
  it("every path a doc names exists in the repository", () => {
    const missing: string[] = [];
    for (const doc of docs) {
      const text = readFileSync(join(ROOT, doc), "utf8");
      for (const [, path] of text.matchAll(CODE_PATH)) {
        if (!folders.has(path.split("/")[0])) continue;
        if (!exists(doc, path)) missing.push(`${doc}: ${path}`);
      }
      for (const [, path] of text.matchAll(LINK)) {
        if (!existsSync(join(ROOT, dirname(doc), path))) missing.push(`${doc}: link ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("the README links every page of docs/", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const linked = new Set([...readme.matchAll(LINK)].map(([, path]) => normalize(path)));
    const pages = docs.filter((doc) => doc.startsWith("docs/"));
    expect(pages.filter((page) => !linked.has(normalize(page)))).toEqual([]);
  });
});
