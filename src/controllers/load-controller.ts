/**
 * `loadController`: resolves a reference with the discovery rules, imports the file in a fresh
 * load session (so an edited helper is never served from the module cache) and returns the
 * definition with its source identity: the root file and every other file the load read, each
 * with the sha256 of the bytes the loader saw. `sourceDigest` pins exactly that identity.
 */
import { pathToFileURL } from "node:url";
import type { WorkflowSource } from "../protocol/worker-launch.ts";
import { WorkflowLoadError } from "../workflows/errors.ts";
import type { SourceDirs } from "../workflows/sources/discovery.ts";
import { hashFile } from "../workflows/sources/identity.ts";
import { importModule } from "../workflows/sources/import-module.ts";
import { translateImportError } from "../workflows/sources/load-workflow.ts";
import {
  closeLoadSession,
  installWorkflowHooks,
  openLoadSession,
  sessionUrl,
} from "../workflows/sources/module-hooks.ts";
import { isControllerDefinition } from "./define-controller.ts";
import { publishFullAuthoringApi } from "./authoring-api.ts";
import { controllerStem, resolveControllerRef } from "./discovery.ts";
import { controllerSourceDigest } from "./source-identity.ts";
import type { ControllerDefinition } from "./types.ts";

export interface LoadedController {
  definition: ControllerDefinition;
  /** Canonical path of the controller file. */
  sourceRef: string;
  source: WorkflowSource;
  sourceDigest: string;
}

export async function loadController(ref: string, dirs: SourceDirs): Promise<LoadedController> {
  const path = resolveControllerRef(ref, dirs);
  return await loadControllerFile(path);
}

/** Loads the controller file at a canonical path (a worker loading its pinned source). */
export async function loadControllerFile(path: string): Promise<LoadedController> {
  publishFullAuthoringApi();
  installWorkflowHooks();
  const session = openLoadSession();
  try {
    let mod: Record<string, unknown>;
    try {
      mod = await importModule(sessionUrl(pathToFileURL(path).href, session));
    } catch (error) {
      throw translateImportError(error, path);
    }
    const definition = mod.default;
    if (!isControllerDefinition(definition)) {
      throw new WorkflowLoadError(
        definition === undefined ? "noDefaultExport" : "invalidDefinition",
        `Controller file ${path} must "export default defineController({...})"`,
        path,
      );
    }
    const stem = controllerStem(path);
    if (stem !== definition.name) {
      throw new WorkflowLoadError(
        "invalidDefinition",
        `Controller file ${path} defines "${definition.name}": name the file ${definition.name}.controller.ts`,
        path,
      );
    }
    const rootHash = session.files.get(path) ?? hashFile(path);
    if (rootHash === null) {
      throw new WorkflowLoadError("controllerNotFound", `Controller file not found: ${path}`, path);
    }
    const mounted = [...session.files]
      .filter(([file]) => file !== path)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([file, hash]) => ({ kind: "file" as const, path: file, hash }));
    const source: WorkflowSource = { root: { kind: "file", path, hash: rootHash }, mounted };
    return { definition, sourceRef: path, source, sourceDigest: controllerSourceDigest(source) };
  } finally {
    closeLoadSession(session);
  }
}
