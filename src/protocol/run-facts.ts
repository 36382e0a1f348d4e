/**
 * Run facts: the committed state of one run as the engine sees it. The host reads these from
 * SQLite (src/state) and sends them to the worker; the engine (src/workflows) decides the next
 * durable boundary from them. The shape lives here because it crosses the worker channel.
 */
import * as v from "valibot";
import type { JsonValue } from "./canonical-json.ts";
import { BudgetSchema } from "./budget.ts";
import { StepUsageSchema } from "./step-usage.ts";

export const JsonValueSchema: v.GenericSchema<JsonValue> = v.lazy(() =>
  v.union([
    v.null(),
    v.boolean(),
    v.pipe(v.number(), v.finite()),
    v.string(),
    v.array(JsonValueSchema),
    v.record(v.string(), JsonValueSchema),
  ])
);

/**
 * A JSON-typed field of a frame straight from JSON.parse (a receipt, a status's
 * `controllerStatus`, a child's input) is a JSON value already: JsonValueSchema would walk it
 * again with a union tried per node (~30 us for a two-key object). This only requires it to be
 * there. For decoded frames only; anything built in memory goes through JsonValueSchema.
 */
export const DecodedJsonSchema = v.custom<JsonValue>(
  (value) => value !== undefined,
  "Invalid JSON value: expected a value",
);

/**
 * Attempt states. `running` has no outcome yet. `interrupted` means the worker stopped before
 * the outcome was committed (crash, pause, claim loss): it does not route and the node runs again
 * as a new attempt when that is safe.
 */
export const ATTEMPT_STATES = [
  "running",
  "waiting",
  "ok",
  "failed",
  "timed_out",
  "cancelled",
  "interrupted",
] as const;
export type AttemptState = (typeof ATTEMPT_STATES)[number];

/** The outcomes a `$result.outcome` switch can see. */
export const NODE_OUTCOMES = ["ok", "failed", "timed_out", "cancelled"] as const;
export type NodeOutcome = (typeof NODE_OUTCOMES)[number];

/** Whether a node's callback may have external side effects; decides what recovery may repeat. */
export const NODE_EFFECTS = ["pure", "external"] as const;
export type NodeEffect = (typeof NODE_EFFECTS)[number];

export const FactErrorSchema = v.object({
  /** A stable machine code, e.g. `nodeFailed`, `workerTimedOut`, `validationFailed`. */
  code: v.pipe(v.string(), v.maxLength(128)),
  /** A bounded, user-facing message. */
  message: v.pipe(v.string(), v.maxLength(8192)),
});
export type FactError = v.InferOutput<typeof FactErrorSchema>;

/** The facts' schemas, with `json` for their JSON-typed fields (input, outputs). */
function factsSchemas(json: v.GenericSchema<JsonValue>) {
  const attempt = v.object({
    attemptId: v.string(),
    /** Flattened node id (`mount/child` inside includes). */
    nodeId: v.string(),
    /** 1-based order of the attempt within the run. */
    sequence: v.pipe(v.number(), v.integer(), v.minValue(1)),
    nodeKind: v.string(),
    effect: v.picklist(NODE_EFFECTS),
    state: v.picklist(ATTEMPT_STATES),
    output: v.optional(json),
    error: v.optional(FactErrorSchema),
    startedAt: v.number(),
    finishedAt: v.optional(v.number()),
    /** Resolved wall-clock deadline (epoch ms), or null when the node has no timeout. */
    deadlineAt: v.nullable(v.number()),
    /** A model step's usage (its whole usage so far while it runs). */
    usage: v.optional(StepUsageSchema),
  });
  const run = v.object({
    runId: v.string(),
    workflowName: v.string(),
    /** The run's canonical project path (node contexts expose it as `state.projectPath`). */
    projectPath: v.optional(v.string()),
    input: json,
    /**
     * The run's attempts in sequence order. An answered checkpoint or human decision is an `ok`
     * attempt whose output is the recorded answer (the run resumes in place).
     */
    attempts: v.array(attempt),
    /**
     * Set when an operator resumed a run blocked with `effectAmbiguous`: the interrupted
     * `external` attempt they reviewed, which the engine may now run again. Without it an
     * interrupted external attempt keeps the run blocked.
     */
    approvedRetry: v.optional(v.object({ attemptId: v.string() })),
    /** The run's budget; a model step does not start while the attempts' spend reaches it. */
    budget: v.optional(BudgetSchema),
    /**
     * Set when the run is a child of a controller (fixed when the run is created): its model
     * steps also count against the controller's budget over its children, which moves with the
     * other children, so the worker asks the host before each one (`budget.check`). Without it
     * there is nothing to ask.
     */
    budgetPool: v.optional(v.literal(true)),
  });
  return { attempt, run };
}

const reference = factsSchemas(JsonValueSchema);
export const AttemptFactSchema = reference.attempt;
export type AttemptFact = v.InferOutput<typeof AttemptFactSchema>;
export const RunFactsSchema = reference.run;

/**
 * `RunFactsSchema` for facts a worker decoded (JSON.parse of the text the host sent): the same
 * checks, but input and outputs are not walked again as JSON (on a validation in a run's
 * prepared process, ~10 us an attempt of a 24-step run's facts: most of their parse).
 * test/protocol/run-facts-decoded.test.ts holds both to the same verdicts and outputs.
 */
export const DecodedRunFactsSchema = factsSchemas(DecodedJsonSchema).run;
export type RunFacts = v.InferOutput<typeof RunFactsSchema>;

/**
 * The run facts cross the worker channel as JSON text in bounded pieces: the reply to
 * `worker.ready` carries the first, each `worker.progress {op: "facts.next"}` the next, until
 * `done`. A piece holds at most this many UTF-16 units and never splits a surrogate pair; its
 * frame stays under 1 MiB whatever the text holds (UTF-8 and JSON escaping at most triple it).
 * So a run of any length, with outputs up to the node output limit, can be resumed.
 */
export const FACTS_CHUNK_CHARS = 256 * 1024;

export const FactsChunkSchema = v.strictObject({
  text: v.pipe(v.string(), v.maxLength(FACTS_CHUNK_CHARS)),
  done: v.boolean(),
});
export type FactsChunk = v.InferOutput<typeof FactsChunkSchema>;
