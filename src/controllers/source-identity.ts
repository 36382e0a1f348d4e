/** The digest that pins a controller's exact source (root file and every file it loaded). */
import { fingerprint, type JsonValue } from "../protocol/canonical-json.ts";
import type { WorkflowSource } from "../protocol/worker-launch.ts";

export function controllerSourceDigest(source: WorkflowSource): string {
  return fingerprint(source as unknown as JsonValue);
}
