/**
 * The whole authoring API as the `pi-workflows` specifier exports it to loaded files: the
 * workflow builders plus `defineController` and the condition helpers. Every worker mode that
 * loads user files publishes it first (`publishAuthoringApi`), so a workflow or controller file
 * gets the same names as `mod.ts`.
 */
import { authoringApi } from "../workflows/api.ts";
import { defineCheckedWorkflow } from "../workflows/define-workflow.ts";
import { TYPE_NAMES_012 } from "../workflows/sources/compat-0-12.ts";
import { publishAuthoringApi, publishVirtualModule } from "../workflows/sources/module-hooks.ts";
import {
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  findCondition,
  isConditionTrue,
  mergeConditions,
} from "./conditions.ts";
import { defineController, isControllerDefinition } from "./define-controller.ts";
import { createResultHelpers, requeue, requeueAfter, settled } from "./reconcile-results.ts";

export const fullAuthoringApi = Object.freeze({
  ...authoringApi,
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  defineController,
  findCondition,
  isConditionTrue,
  isControllerDefinition,
  mergeConditions,
});

/** `@osolmaz/pi-workflows/controllers`, the entry 0.12 controller files import. */
export const CONTROLLERS_SPECIFIERS = [
  "pi-workflows/controllers",
  "@osolmaz/pi-workflows/controllers",
];

export const controllersApi = Object.freeze({
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  createResultHelpers,
  defineController,
  findCondition,
  isConditionTrue,
  isControllerDefinition,
  mergeConditions,
  requeue,
  requeueAfter,
  settled,
});

/**
 * Makes `pi-workflows` export the whole API in this process (before any file loads). With
 * `checkedSource` (a run's worker, loading bytes the resolver already checked) `defineWorkflow`
 * skips its schema check: see `defineCheckedWorkflow`.
 */
export function publishFullAuthoringApi(options: { checkedSource?: boolean } = {}): void {
  publishVirtualModule(
    "controllers",
    CONTROLLERS_SPECIFIERS,
    controllersApi,
    TYPE_NAMES_012["./controllers"],
  );
  publishAuthoringApi(
    options.checkedSource
      ? Object.freeze({ ...fullAuthoringApi, defineWorkflow: defineCheckedWorkflow })
      : fullAuthoringApi,
  );
}
