/**
 * Payloads and receipts of the `controller.*` operations. Controllers reconcile in supervised
 * controller workers; the host only records and schedules. Recognised now, served later.
 */
import * as v from "valibot";
import { JsonValueSchema } from "./run-facts.ts";
import {
  AbsolutePathSchema,
  DigestSchema,
  looseObject,
  RevisionSchema,
  strictObject,
} from "./fields.ts";

export const ControllerNameSchema = v.pipe(
  v.string(),
  v.regex(/^[a-z0-9][a-z0-9._-]{0,127}$/, "Invalid controller name: expected [a-z0-9._-], 1-128"),
);

export const ControllerListPayloadSchema = v.optional(strictObject({}), {});
export const ControllerGetPayloadSchema = strictObject({ name: ControllerNameSchema });

/** `controller.apply`: create or update a controller from a resolved source at an exact digest. */
export const ControllerApplyPayloadSchema = strictObject({
  name: ControllerNameSchema,
  /** Workflow or controller reference, resolved like `run.start`'s `workflow`. */
  source: v.pipe(v.string(), v.minLength(1), v.maxLength(4096)),
  cwd: AbsolutePathSchema,
  /** The digest the caller saw; the host refuses when the resolved source differs. */
  sourceDigest: v.optional(DigestSchema),
  spec: v.optional(JsonValueSchema),
});

export const ControllerReconcilePayloadSchema = strictObject({ name: ControllerNameSchema });
export const ControllerDeletePayloadSchema = strictObject({ name: ControllerNameSchema });

export const ControllerSummarySchema = looseObject({
  name: ControllerNameSchema,
  state: v.string(),
  revision: RevisionSchema,
  sourceDigest: v.optional(DigestSchema),
});

export const ControllerListReceiptSchema = looseObject({
  controllers: v.array(ControllerSummarySchema),
});
export const ControllerReceiptSchema = looseObject({ controller: ControllerSummarySchema });
