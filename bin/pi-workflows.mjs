#!/usr/bin/env node
// npm bin entry. Node refuses to strip types under node_modules, so the published package
// ships a bundled build (compile/) here; from a checkout it runs the TypeScript source.
// Node's compile cache (its default directory) covers the CLI's own code: this process loads no
// workflow code (the host's workers and resolver get theirs in the state directory).
import module from "node:module";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

module.enableCompileCache?.();
const bundled = fileURLToPath(new URL("../dist/pi-workflows.mjs", import.meta.url));
await import(existsSync(bundled) ? bundled : "../src/cli/main.ts");
