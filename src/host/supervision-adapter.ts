/**
 * The one place the host front half obtains its supervision (the back half: scheduler, workers,
 * recovery, source resolver), so the seam stays visible in one import.
 */
import type { HostContext, Supervision } from "./supervision/api.ts";
import { createSupervision, type SupervisionExtras } from "./supervision/index.ts";

export function createHostSupervision(
  ctx: HostContext,
  extras?: SupervisionExtras,
): Supervision {
  return createSupervision(ctx, extras);
}
