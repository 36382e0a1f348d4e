/**
 * Resolving a workflow file's relative imports the way TypeScript projects write them (and the
 * way 0.12's loader resolved them): `./lib.js` names `lib.ts` when only that exists, and an
 * extensionless `./lib` names `lib.ts`, `lib.mts`, `lib.js`, `lib.mjs` or that directory's
 * `index.ts`/`index.js`. Node's own resolution is tried first; a specifier it resolves is never
 * reinterpreted.
 */
import type module from "node:module";

type ResolveFn = Parameters<NonNullable<Parameters<typeof module.registerHooks>[0]["resolve"]>>[2];
type ResolveContext = Parameters<ResolveFn>[1];
type ResolveResult = ReturnType<ResolveFn>;

const JS_TO_TS: Record<string, string> = { ".js": ".ts", ".mjs": ".mts" };
const EXTENSIONLESS = [
  ".ts",
  ".mts",
  ".js",
  ".mjs",
  "/index.ts",
  "/index.mts",
  "/index.js",
  "/index.mjs",
];
const FILE_EXTENSIONS = new Set([".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json", ".node"]);

export function resolveLikeTypeScript(
  specifier: string,
  context: ResolveContext,
  next: ResolveFn,
): ResolveResult {
  try {
    return next(specifier, context);
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code !== "ERR_MODULE_NOT_FOUND" && code !== "ERR_UNSUPPORTED_DIR_IMPORT") throw error;
    if (!/^\.{1,2}\//.test(specifier)) throw error;
    for (const candidate of candidates(specifier)) {
      try {
        return next(candidate, context);
      } catch {
        // Try the next spelling; the original error is the one reported.
      }
    }
    throw error;
  }
}

function candidates(specifier: string): string[] {
  const path = specifier.replace(/[?#].*$/, "");
  const ext = /\.[^./]+$/.exec(path)?.[0];
  if (ext !== undefined && JS_TO_TS[ext]) return [path.slice(0, -ext.length) + JS_TO_TS[ext]];
  // `./lib.config` has no file extension of its own: it is extensionless like `./lib`.
  if (ext !== undefined && FILE_EXTENSIONS.has(ext)) return [];
  const base = path.replace(/\/$/, "");
  return EXTENSIONLESS.map((suffix) => base + suffix);
}
