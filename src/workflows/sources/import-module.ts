/**
 * Dynamic import through a `vm.Script` compiled with `USE_MAIN_CONTEXT_DEFAULT_LOADER`: inside
 * a Node single executable a plain `import()` of a file fails, this route works there and in
 * plain Node and Deno alike (registered module hooks still apply).
 */
import process from "node:process";
import vm from "node:vm";

type Importer = (url: string) => Promise<Record<string, unknown>>;
let importer: Importer | null = null;
let warned = false;

export function importModule(url: string): Promise<Record<string, unknown>> {
  importer ??= makeImporter();
  if (warned) return importer(url);
  warned = true;
  // Node flags the loader constant as experimental on first use; that notice is noise for
  // workflow users, so hide exactly that one warning around the first import.
  const original = process.emitWarning;
  process.emitWarning = function (warning: string | Error, ...rest: unknown[]) {
    if (String(warning).includes("USE_MAIN_CONTEXT_DEFAULT_LOADER")) return;
    return (original as (...a: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    return importer(url);
  } finally {
    process.emitWarning = original;
  }
}

function makeImporter(): Importer {
  const constant = (vm.constants as Record<string, unknown> | undefined)
    ?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  if (constant === undefined) return (url) => import(url);
  const script = new vm.Script("(url) => import(url)", {
    importModuleDynamically: constant as never,
  });
  return script.runInThisContext() as Importer;
}
