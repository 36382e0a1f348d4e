/**
 * Controllers over the in-process supervision with real worker, controller-worker and resolver
 * children (test/support/supervision.ts): write a controller into the project, apply resources the
 * way `controller.apply` does (resolver child, then the state transition), and wait on durable
 * resource state with deadlines.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { JsonValue } from "../../src/protocol/canonical-json.ts";
import type { PiLaunch } from "../../src/protocol/pi-launch.ts";
import type { ControllerOptions } from "../../src/host/controllers/options.ts";
import type { SupervisionOptions } from "../../src/host/host-context.ts";
import type { SupervisionExtras } from "../../src/host/host-supervision.ts";
import { waitUntil } from "../../src/os/stop-group.ts";
import {
  readResourceDetail,
  type ResourceDetail,
} from "../../src/state/controllers/controller-queries.ts";
import { applyResource, type ApplyResourceResult } from "../../src/state/controllers/resources.ts";
import { createHarness, type Harness, type HarnessFixture } from "./supervision.ts";

export const FAST_CONTROLLERS: ControllerOptions = {
  maxConcurrentReconciles: 4,
  workerIdleMs: 60_000,
  resolverIdleMs: 60_000,
  backoffBaseMs: 200,
  backoffMaxMs: 2_000,
};

export interface ControllerHarness extends Harness {
  /** Writes `.pi/controllers/<name>.controller.ts`; returns its path. */
  writeController(name: string, source: string): string;
  apply(
    controller: string,
    key: string,
    spec: JsonValue,
    pi?: PiLaunch,
  ): Promise<ApplyResourceResult>;
  resource(controller: string, key: string): ResourceDetail | undefined;
  waitForResource(
    controller: string,
    key: string,
    done: (detail: ResourceDetail) => boolean,
    ms?: number,
  ): Promise<ResourceDetail>;
}

export async function createControllerHarness(
  options: Partial<SupervisionOptions> = {},
  extras: SupervisionExtras = {},
  controllerOptions: Partial<ControllerOptions> = {},
  fixture: HarnessFixture = {},
): Promise<ControllerHarness> {
  const h = await createHarness(
    options,
    extras,
    { ...FAST_CONTROLLERS, ...controllerOptions },
    fixture,
  );
  const dir = join(h.projectDir, ".pi", "controllers");
  mkdirSync(dir, { recursive: true });
  const harness: ControllerHarness = Object.assign(h, {
    writeController(name: string, source: string) {
      const path = join(dir, `${name}.controller.ts`);
      writeFileSync(path, source);
      return path;
    },
    async apply(controller: string, key: string, spec: JsonValue, pi?: PiLaunch) {
      const resolved = await h.supervision.controllers.resolve({
        controller,
        cwd: h.projectDir,
        spec,
      });
      if (!resolved.ok) {
        throw new Error(`Resolve failed: ${resolved.code}: ${resolved.message}\n${h.workerLogs()}`);
      }
      const result = applyResource(h.store, {
        controller: {
          projectPath: h.projectDir,
          name: resolved.name,
          sourceRef: resolved.sourceRef,
          source: resolved.source as unknown as JsonValue,
          sourceDigest: resolved.sourceDigest,
          timeoutMs: resolved.timeoutMs,
          ...(pi ? { pi } : {}),
        },
        key,
        spec,
        initialStatus: resolved.initialStatus,
      });
      h.supervision.controllers.wake();
      return result;
    },
    resource(controller: string, key: string) {
      return readResourceDetail(h.store, { projectPath: h.projectDir, name: controller, key });
    },
    async waitForResource(
      controller: string,
      key: string,
      done: (detail: ResourceDetail) => boolean,
      ms = 30_000,
    ) {
      let last: ResourceDetail | undefined;
      const ok = await waitUntil(() => {
        last = harness.resource(controller, key);
        return last !== undefined && done(last);
      }, ms);
      if (!ok) {
        throw new Error(
          `Resource ${controller}/${key} did not reach the expected state in ${ms} ms: ${
            JSON.stringify(last, null, 1)?.slice(0, 3000)
          }\n${h.logs.join("\n")}\n${h.workerLogs()}`,
        );
      }
      return last!;
    },
  });
  return harness;
}

/** Settled at the resource's current generation with no reconcile pending or running. */
export function isSettled(detail: ResourceDetail): boolean {
  return detail.resource.status.observedGeneration === detail.resource.metadata.generation &&
    detail.queue !== null && !detail.queue.pending && !detail.queue.reconciling;
}
