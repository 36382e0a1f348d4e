/** The host's back half: `createSupervision(ctx)` implements the seam in api.ts. */
export type {
  CreateSupervision,
  HostContext,
  ResolveRequest,
  ResolveResult,
  Supervision,
  SupervisionOptions,
} from "./api.ts";
export { createSupervision, type SupervisionExtras } from "./supervision.ts";
export {
  DEFAULT_SUPERVISION_OPTIONS,
  readSupervisionOptions,
  validateSupervisionOptions,
} from "./options.ts";
