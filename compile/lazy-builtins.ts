/**
 * An esbuild plugin for the ESM bundle: each `node:` built-in import becomes a small module that
 * takes the built-in from `process.getBuiltinModule` when it is first evaluated.
 *
 * Why: an ESM bundle hoists every `import ... from "node:x"` to its top, so Node loads all of
 * them (SQLite, sockets, child processes, crypto) before the first line of the CLI runs. That
 * slows `--version`, and on Node 22 loading `node:sqlite` prints an ExperimentalWarning before
 * the CLI's warning filter (src/cli/quiet-warnings.ts) is installed. As bundled modules, the
 * built-ins load in source order, inside the lazy initializer of the module that needs them.
 */
import process from "node:process";
import type { Plugin } from "esbuild";

const NAMESPACE = "piw-lazy-builtin";
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

export function lazyBuiltins(): Plugin {
  return {
    name: "lazy-builtins",
    setup(pluginBuild) {
      pluginBuild.onResolve(
        { filter: /^node:/ },
        (args) => ({ path: args.path, namespace: NAMESPACE }),
      );
      pluginBuild.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const builtin = process.getBuiltinModule(args.path) as Record<string, unknown> | undefined;
        if (builtin === undefined) {
          return { errors: [{ text: `Unknown built-in module: ${args.path}` }] };
        }
        // Export names come from the Node running the build; a name an older Node lacks is
        // undefined there, as it would be with a direct import.
        // Accessors are skipped: reading one runs it (process.stdin would open a stream at
        // start-up); importing one by name fails the build instead.
        // `node:process` gives its default export only (every module here imports just that):
        // copying its ~90 properties cost ~0.8 ms of every worker's start-up. A named import of it
        // fails the build.
        const names = args.path === "node:process"
          ? []
          : Object.keys(builtin).filter((n) =>
            n !== "default" && IDENTIFIER.test(n) &&
            !Object.getOwnPropertyDescriptor(builtin, n)?.get
          );
        const lines = [`const m = process.getBuiltinModule(${JSON.stringify(args.path)});`];
        lines.push("export default m;");
        for (const name of names) lines.push(`export const ${name} = m.${name};`);
        return { contents: lines.join("\n"), loader: "js" };
      });
    },
  };
}
