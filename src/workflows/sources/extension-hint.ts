/**
 * Workflow files load as ES modules, where an import names a file exactly: `./helpers` does not
 * find `./helpers.ts` as a bundler would. When a missing module (or a directory) has a file of
 * that name with a loadable extension, the load error says the import to write instead.
 */
import { existsSync, statSync } from "node:fs";
import { dirname, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";

const EXTENSIONS = [".ts", ".mts", ".js", ".mjs"];

/**
 * ` : import "./lib/helpers.ts" with its extension (...)` for Node's module-not-found and
 * directory-import messages whose missing path has such a file; "" otherwise.
 */
export function extensionHint(message: string): string {
  const found = /(?:Cannot find module|Directory import) '([^']+)'.*? imported from (.+)$/.exec(
    message,
  );
  if (!found) return "";
  const missing = pathOf(found[1]);
  const importer = pathOf(found[2].trim());
  if (missing === null || importer === null) return "";
  const directory = isDirectory(missing);
  const candidates = EXTENSIONS.map((ext) =>
    directory ? `${missing}${sep}index${ext}` : `${missing}${ext}`
  );
  const file = candidates.find((path) => existsSync(path) && !isDirectory(path));
  if (!file) return "";
  let specifier = relative(dirname(importer), file).split(sep).join("/");
  if (!specifier.startsWith(".")) specifier = `./${specifier}`;
  return `: import "${specifier}" with its extension (workflow files are ES modules: Node adds none)`;
}

function pathOf(text: string): string | null {
  const clean = text.replace(/[?#].*$/, "");
  try {
    return clean.startsWith("file:") ? fileURLToPath(clean) : clean.startsWith("/") ? clean : null;
  } catch {
    return null;
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
