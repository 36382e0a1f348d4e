/**
 * An esbuild plugin for both bundles: a heavy built-in whose users only call plain functions
 * (`node:crypto`: createHash, randomUUID, randomBytes) becomes a module of forwarding functions
 * that load the built-in on the first call, not when the importing module is evaluated.
 *
 * Why: `src/protocol/canonical-json.ts` imports `createHash`, and nearly everything imports
 * canonical-json, so the CLI's first lines would load all of node:crypto (~10 ms, a third of a
 * worker's start-up) although a worker needs no hash before it says `worker.ready`. And
 * `node:util` (only `parseArgs` is used) has lazily built properties (MIMEParams, diff) that
 * lazy-builtins.ts would evaluate by re-exporting every name (~5 ms, and it opens stderr).
 *
 * Only lower-case function exports are forwarded: classes (Hash, KeyObject), objects
 * (webcrypto, constants) and the default export are left out on purpose, so importing one of
 * them fails the build loudly instead of changing `new`, `instanceof` or identity.
 */
import process from "node:process";
import type { Plugin } from "esbuild";

const NAMESPACE = "piw-deferred-builtin";
const FORWARDED = /^[a-z][\w$]*$/;

/** Built-ins deferred by default: the ones the CLI start-up path would otherwise load. */
export const DEFERRED_BUILTINS = ["node:crypto", "node:util"] as const;

export function deferredBuiltins(ids: readonly string[] = DEFERRED_BUILTINS): Plugin {
  const filter = new RegExp(
    `^(${ids.map((id) => id.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})$`,
  );
  return {
    name: "deferred-builtins",
    setup(pluginBuild) {
      pluginBuild.onResolve({ filter }, (args) => ({ path: args.path, namespace: NAMESPACE }));
      pluginBuild.onLoad({ filter: /.*/, namespace: NAMESPACE }, (args) => {
        const builtin = process.getBuiltinModule(args.path) as Record<string, unknown> | undefined;
        if (builtin === undefined) {
          return { errors: [{ text: `Unknown built-in module: ${args.path}` }] };
        }
        const names = Object.keys(builtin).filter((name) =>
          FORWARDED.test(name) && typeof builtin[name] === "function"
        );
        const lines = [
          "let m;",
          `const load = () => m ??= process.getBuiltinModule(${JSON.stringify(args.path)});`,
        ];
        for (const name of names) {
          lines.push(`export function ${name}(...a) { return load().${name}(...a); }`);
        }
        return { contents: lines.join("\n"), loader: "js" };
      });
    },
  };
}
