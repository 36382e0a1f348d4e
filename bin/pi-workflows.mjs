#!/usr/bin/env node
// npm bin entry. Node refuses to strip types under node_modules, so the published package
// ships a bundled build (compile/) here; from a checkout it runs the TypeScript source.
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

const bundled = fileURLToPath(new URL("../dist/pi-workflows.mjs", import.meta.url));
await import(existsSync(bundled) ? bundled : "../src/cli/main.ts");
