/**
 * Builds only the npm package's CLI bundle `dist/pi-workflows.mjs` (what `bin/pi-workflows.mjs`
 * runs, and what the Pi extension starts the host with when the package is installed under
 * node_modules). `npm pack` and `npm publish` run it as `prepack`, so a published package
 * always carries a bundle built from its own source.
 *
 *   node compile/npm-bundle.ts [outfile]
 */
import { bundleCli } from "./build.ts";

const outfile = await bundleCli(process.argv[2]);
console.log(JSON.stringify({ bundle: outfile }));
