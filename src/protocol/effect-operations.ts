/**
 * `effect.resolve`: the operator's reviewed recovery of an ambiguous effect (spec "Effects and
 * retry safety": an ambiguous effect is terminal for automatic retry; an operator may use a
 * separate reviewed recovery action after inspecting the external system). The envelope names
 * the run; the payload names the blocking attempt or one of its effects and the verdict.
 */
import * as v from "valibot";
import { checkWithJsonSchema, looseObject, OpaqueIdSchema, strictObject } from "./fields.ts";
import { ClientJsonValueSchema } from "./json-depth.ts";
import { RunSummarySchema } from "./run-operations.ts";

/**
 * `applied`: the effect happened, `output` becomes the node's result. `notApplied`: it did not,
 * the node runs again. `retry`: unknown, run it again anyway (the operator accepts the risk).
 */
export const EFFECT_VERDICTS = ["applied", "notApplied", "retry"] as const;
export type EffectVerdict = (typeof EFFECT_VERDICTS)[number];

const EffectResolveFieldsSchema = strictObject({
  /** The interrupted attempt that blocks the run, or one of its ambiguous effects. */
  target: OpaqueIdSchema,
  verdict: v.picklist(EFFECT_VERDICTS),
  /** The node's result; required with `applied`, refused otherwise. */
  output: v.optional(ClientJsonValueSchema),
  /** Who reviewed it (recorded in the run's event log, never shown in status output). */
  operator: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(200))),
});

export const EffectResolvePayloadSchema = v.pipe(
  EffectResolveFieldsSchema,
  checkWithJsonSchema<v.InferOutput<typeof EffectResolveFieldsSchema>>(
    (p) => (p.verdict === "applied") === (p.output !== undefined),
    "Invalid effect.resolve: output goes with the applied verdict, and only with it",
    {
      if: { properties: { verdict: { const: "applied" } } },
      then: { required: ["output"] },
      else: { not: { required: ["output"] } },
    },
  ),
);

export const EffectResolveReceiptSchema = looseObject({
  run: RunSummarySchema,
  resolution: looseObject({
    attemptId: OpaqueIdSchema,
    nodeId: v.string(),
    verdict: v.picklist(EFFECT_VERDICTS),
    effectIds: v.array(OpaqueIdSchema),
    /** The new `ok` attempt carrying the adopted output (`applied` only). */
    adoptedAttemptId: v.nullable(OpaqueIdSchema),
    /** The run had ended: the verdict was only recorded, nothing runs again. */
    ended: v.optional(v.boolean()),
  }),
});
