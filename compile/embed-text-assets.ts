/**
 * An esbuild plugin for text files that modules read from beside themselves (`schema.sql`):
 * `readFileSync(new URL("./x", import.meta.url), "utf8")`. In a bundle `import.meta.url` is the
 * bundle or the executable, where no such file exists, so each such read becomes the file's
 * text as a string literal. The build also searches its output for this pattern and fails when
 * one is left.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Plugin } from "esbuild";

export const TEXT_ASSET_READ =
  /readFileSync\(\s*new URL\(\s*"(\.{1,2}\/[^"]+)"\s*,\s*import\.meta\.url\s*\)\s*,\s*"utf8"\s*,?\s*\)/g;

export function embedTextAssets(): Plugin {
  return {
    name: "embed-text-assets",
    setup(pluginBuild) {
      pluginBuild.onLoad({ filter: /[\\/]src[\\/].*\.ts$/ }, (args) => {
        const source = readFileSync(args.path, "utf8");
        if (!source.includes("import.meta.url")) return undefined;
        const contents = source.replace(TEXT_ASSET_READ, (_match, relative: string) => {
          const asset = resolve(dirname(args.path), relative);
          return JSON.stringify(readFileSync(asset, "utf8"));
        });
        return contents === source ? undefined : { contents, loader: "ts" };
      });
    },
  };
}
