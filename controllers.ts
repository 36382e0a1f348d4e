/**
 * The controller API as 0.12 controller files import it, `@osolmaz/pi-workflows/controllers`
 * (docs/controllers.md, docs/compat-0.12.md). Inside a running host the loader serves the same
 * objects; `pi-workflows` exports them too.
 */
export { defineController, isControllerDefinition } from "./src/controllers/define-controller.ts";
export {
  applyStatusPatch,
  conditionFalse,
  conditionTrue,
  conditionUnknown,
  findCondition,
  isConditionTrue,
  mergeConditions,
} from "./src/controllers/conditions.ts";
export {
  createResultHelpers,
  requeue,
  requeueAfter,
  settled,
} from "./src/controllers/reconcile-results.ts";
export type * from "./src/controllers/types.ts";
