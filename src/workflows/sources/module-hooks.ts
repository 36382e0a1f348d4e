/**
 * Module hooks for loading workflow files at run time (installed once per process):
 *
 * - `pi-workflows` and `@osolmaz/pi-workflows` resolve to a virtual module whose exports read
 *   the running API from `globalThis[Symbol.for("pi-workflows.api")]`, so workflow files get the
 *   same objects as the engine and load unchanged from any location. `.../builtins` does the
 *   same for the built-in workflow definitions (`autoplanWorkflow`, ...).
 * - Every load session tags its files with a `piw-load=<token>` query, propagated to relative
 *   imports. A new session therefore gets fresh module instances (an edited helper is never
 *   served from the module cache), and the load hook records the exact bytes of every file the
 *   session loaded: that is the source identity's `mounted` map.
 * - A `.ts` file under a `"type": "commonjs"` package is loaded as module TypeScript.
 * - A session's TypeScript file whose stripped text was saved for exactly its bytes
 *   (stripped-sources.ts) is served that text as a plain ES module: a kept run process's fresh
 *   instances never start Node's stripper.
 * - A layer above may publish a module of its own the same way (`publishVirtualModule`): the test
 *   kit's `@osolmaz/pi-workflows/testing` for `pi-workflows test`.
 */
import { readFileSync } from "node:fs";
import module from "node:module";
import { fileURLToPath } from "node:url";
import { sha256Hex } from "../../protocol/canonical-json.ts";
import { API_GLOBAL_KEY, authoringApi } from "../api.ts";
import { BUILTINS_GLOBAL_KEY, builtinsApi } from "./builtins-api.ts";
import { EXTENSION_ENTRY_MESSAGE, TYPE_NAMES_012 } from "./compat-0-12.ts";
import { resolveLikeTypeScript } from "./resolve-like-typescript.ts";
import { strippedModule } from "./stripped-sources.ts";

export const API_SPECIFIERS = ["pi-workflows", "@osolmaz/pi-workflows"];
/** The built-in workflow definitions, as 0.12 files import them. */
export const BUILTINS_SPECIFIERS = ["pi-workflows/builtins", "@osolmaz/pi-workflows/builtins"];
/** The Pi extension entry of 0.12: a file importing it gets a load error saying why not. */
export const EXTENSION_SPECIFIERS = ["pi-workflows/extension", "@osolmaz/pi-workflows/extension"];
const VIRTUAL_API_URL = "file:///__pi_workflows__/authoring-api.mjs";
const VIRTUAL_EXTENSION_URL = "file:///__pi_workflows__/extension.mjs";
const VIRTUAL_BUILTINS_URL = "file:///__pi_workflows__/builtins.mjs";
const TOKEN_PARAM = "piw-load";

export interface LoadSession {
  token: string;
  /** Canonical file path -> `sha256:<hex>` of the bytes the loader read. */
  files: Map<string, string>;
}

const sessions = new Map<string, LoadSession>();
let installed = false;
let counter = 0;

let publishedApi: Readonly<Record<string, unknown>> = authoringApi;

/** Modules published by layers above: specifier -> virtual URL, and URL -> its exports. */
const extraSpecifiers = new Map<string, string>();
const extraModules = new Map<
  string,
  { key: symbol; api: Readonly<Record<string, unknown>>; typeNames: readonly string[] }
>();

/**
 * Serves `api` as the module that `specifiers` import, in files loaded through these hooks, as
 * the authoring API is served. Call before the first file imports it.
 */
export function publishVirtualModule(
  name: string,
  specifiers: readonly string[],
  api: Readonly<Record<string, unknown>>,
  typeNames: readonly string[] = [],
): void {
  const key = Symbol.for(`pi-workflows.${name}`);
  const url = `file:///__pi_workflows__/${name}.mjs`;
  (globalThis as Record<symbol, unknown>)[key] = api;
  extraModules.set(url, { key, api, typeNames });
  for (const specifier of specifiers) extraSpecifiers.set(specifier, url);
}

/**
 * The names `pi-workflows` exports to files loaded in this process: the workflow API by
 * default; a layer above adds its own (the controller API) before the first file loads, since the
 * virtual module's export list is fixed once it has been loaded.
 */
export function publishAuthoringApi(api: Readonly<Record<string, unknown>>): void {
  publishedApi = api;
  (globalThis as Record<symbol, unknown>)[API_GLOBAL_KEY] = api;
}

export function installWorkflowHooks(): void {
  const g = globalThis as Record<symbol, unknown>;
  if (g[API_GLOBAL_KEY] === undefined) g[API_GLOBAL_KEY] = publishedApi;
  if (g[BUILTINS_GLOBAL_KEY] === undefined) g[BUILTINS_GLOBAL_KEY] = builtinsApi();
  if (installed) return;
  installed = true;
  const registerHooks = (module as unknown as { registerHooks?: typeof module.registerHooks })
    .registerHooks;
  if (typeof registerHooks !== "function") {
    throw new Error(
      "Workflow loading needs module.registerHooks: run on Node >= 22.19 or a current Deno",
    );
  }
  registerHooks({
    resolve(specifier, context, next) {
      if (API_SPECIFIERS.includes(specifier)) return { url: VIRTUAL_API_URL, shortCircuit: true };
      if (BUILTINS_SPECIFIERS.includes(specifier)) {
        return { url: VIRTUAL_BUILTINS_URL, shortCircuit: true };
      }
      if (EXTENSION_SPECIFIERS.includes(specifier)) {
        return { url: VIRTUAL_EXTENSION_URL, shortCircuit: true };
      }
      const extra = extraSpecifiers.get(specifier);
      if (extra !== undefined) return { url: extra, shortCircuit: true };
      const token = tokenOf(context.parentURL);
      // A workflow file's own imports resolve as 0.12's loader resolved them: `./lib.js` finds
      // lib.ts, and `./lib` finds lib.ts or lib/index.ts.
      const result = token
        ? resolveLikeTypeScript(specifier, context, next)
        : next(specifier, context);
      if (token && result.url.startsWith("file:") && !result.url.includes("/node_modules/")) {
        return { ...result, url: withToken(result.url, token) };
      }
      return result;
    },
    load(url, context, next) {
      if (url === VIRTUAL_API_URL) {
        return {
          format: "module",
          source: virtualSource(API_GLOBAL_KEY, publishedApi, TYPE_NAMES_012["."]),
          shortCircuit: true,
        };
      }
      if (url === VIRTUAL_BUILTINS_URL) {
        return {
          format: "module",
          source: virtualSource(BUILTINS_GLOBAL_KEY, builtinsApi(), TYPE_NAMES_012["./builtins"]),
          shortCircuit: true,
        };
      }
      if (url === VIRTUAL_EXTENSION_URL) {
        return {
          format: "module",
          // A default export to link against: the message comes when the module runs.
          source: `throw new Error(${
            JSON.stringify(EXTENSION_ENTRY_MESSAGE)
          });\nexport default undefined;`,
          shortCircuit: true,
        };
      }
      const extra = extraModules.get(url);
      if (extra !== undefined) {
        return {
          format: "module",
          source: virtualSource(extra.key, extra.api, extra.typeNames),
          shortCircuit: true,
        };
      }
      const token = tokenOf(url);
      const session = token ? sessions.get(token) : undefined;
      if (!session) return next(url, context);
      const path = fileURLToPath(stripQuery(url));
      // These very bytes' stripped text, saved once (a prepared process's fresh instances).
      const saved = strippedModule(path, url);
      if (saved !== null) {
        session.files.set(path, saved.hash);
        // Not saved: Node strips the bytes read there (module TypeScript, as below).
        return "js" in saved
          ? { format: "module", source: saved.js, shortCircuit: true }
          : { format: "module-typescript", source: saved.bytes, shortCircuit: true };
      }
      const result = next(url, context);
      // Node hands the hook the file's own bytes; Deno hands it transpiled JavaScript (format
      // undefined), whose hash would never match the file, so there the file is read again.
      const source = typeof result.format === "string" && !("Deno" in globalThis) &&
          result.source != null
        ? result.source
        : readFileSync(path);
      session.files.set(path, `sha256:${sha256Hex(toBytes(source))}`);
      if (result.format === "commonjs-typescript") {
        return { ...result, format: "module-typescript", source };
      }
      return result;
    },
  });
}

export function openLoadSession(): LoadSession {
  const session = { token: `${++counter}`, files: new Map<string, string>() };
  sessions.set(session.token, session);
  return session;
}

export function closeLoadSession(session: LoadSession): void {
  sessions.delete(session.token);
}

export function sessionUrl(fileUrl: string, session: LoadSession): string {
  return withToken(fileUrl, session.token);
}

/**
 * A module re-exporting every property of the object published at `key`, and each of
 * `typeNames` it lacks as `undefined` (a type imported without `type` then links).
 */
function virtualSource(key: symbol, published: object, typeNames: readonly string[]): string {
  const lines = [`const api = globalThis[Symbol.for(${JSON.stringify(key.description)})];`];
  for (const name of Object.keys(published)) lines.push(`export const ${name} = api.${name};`);
  for (const name of typeNames) {
    if (!Object.hasOwn(published, name)) lines.push(`export const ${name} = undefined;`);
  }
  lines.push("export default api;");
  return lines.join("\n");
}

function tokenOf(url: string | undefined): string | null {
  if (!url) return null;
  const q = url.indexOf("?");
  if (q < 0) return null;
  return new URLSearchParams(url.slice(q + 1)).get(TOKEN_PARAM);
}

function withToken(url: string, token: string): string {
  if (tokenOf(url) === token) return url;
  const u = new URL(url);
  u.searchParams.set(TOKEN_PARAM, token);
  return u.href;
}

function stripQuery(url: string): string {
  const q = url.search(/[?#]/);
  return q < 0 ? url : url.slice(0, q);
}

function toBytes(source: string | ArrayBuffer | ArrayBufferView): Uint8Array | string {
  if (typeof source === "string") return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
}
