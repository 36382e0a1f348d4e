/**
 * Finding controllers, with the workflows' precedence rules: the project's `.pi/controllers/`,
 * then `${PI_CODING_AGENT_DIR:-~/.pi/agent}/controllers/`; an earlier file shadows a later one
 * with the same name. A file's name is its stem (`sync.controller.ts` is `sync`). A reference
 * with a slash or a controller suffix is a path.
 */
import { existsSync, realpathSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { WorkflowLoadError } from "../workflows/errors.ts";
import { defaultAgentDir, type SourceDirs } from "../workflows/sources/discovery.ts";
import { isFile, listSourceFiles } from "../base/workflow-files.ts";

export const CONTROLLER_SUFFIXES = [
  ".controller.ts",
  ".controller.mts",
  ".controller.js",
  ".controller.mjs",
];

export interface DiscoveredController {
  name: string;
  origin: "project" | "user";
  ref: { kind: "file"; path: string };
}

export function controllerDirs(dirs: SourceDirs): { origin: "project" | "user"; dir: string }[] {
  return [
    { origin: "project", dir: join(dirs.cwd, ".pi", "controllers") },
    { origin: "user", dir: join(dirs.agentDir ?? defaultAgentDir(), "controllers") },
  ];
}

/** The stem of a controller file name, or null when it has no controller suffix. */
export function controllerStem(fileName: string): string | null {
  const suffix = CONTROLLER_SUFFIXES.find((s) => fileName.endsWith(s));
  const base = fileName.slice(fileName.lastIndexOf("/") + 1);
  return suffix ? base.slice(0, -suffix.length) : null;
}

/** Every visible controller. */
export function discoverControllers(dirs: SourceDirs): DiscoveredController[] {
  return listSourceFiles(controllerDirs(dirs), controllerStem).map((file) => ({
    name: file.name,
    origin: file.origin,
    ref: { kind: "file", path: file.path },
  }));
}

/** Resolves a name or path to one canonical file; throws a `WorkflowLoadError`. */
export function resolveControllerRef(ref: string, dirs: SourceDirs): string {
  if (typeof ref !== "string" || ref.trim() === "") {
    throw new WorkflowLoadError("controllerNotFound", "Controller reference is empty");
  }
  const looksLikePath = ref.includes("/") || controllerStem(ref) !== null;
  if (looksLikePath) {
    const path = isAbsolute(ref) ? ref : resolve(dirs.cwd, ref);
    if (!existsSync(path) || !isFile(path)) {
      throw new WorkflowLoadError(
        "controllerNotFound",
        `Controller file not found: ${path}`,
        path,
      );
    }
    if (controllerStem(path) === null) {
      throw new WorkflowLoadError(
        "controllerNotFound",
        `Not a controller file: ${path}: name it <name>.controller.ts`,
        path,
      );
    }
    return realpathSync.native(path);
  }
  const found = discoverControllers(dirs).find((c) => c.name === ref);
  if (!found) {
    throw new WorkflowLoadError(
      "controllerNotFound",
      `Controller not found: ${ref}: looked in .pi/controllers/ and the agent controllers directory`,
    );
  }
  return realpathSync.native(found.ref.path);
}
