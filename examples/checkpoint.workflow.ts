/**
 * An ordinary checkpoint with a declared answer shape and a deadline. Anyone may answer it (a
 * person from the CLI, or the model through the Pi tool); the host refuses an answer that does
 * not fit `answerSchema`, naming the field. Nobody answering within an hour ends the checkpoint
 * `timed_out`, and the run takes the `timed_out` route instead of failing.
 *
 *   pi-workflows start examples/checkpoint.workflow.ts "rename the config flag" --wait
 *   pi-workflows answer <runId> '{"approved": true, "note": "go ahead"}'
 *   pi-workflows answer <runId> '{"approved": false}'
 */
import { checkpoint, compute, defineWorkflow } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "checkpoint",
  input: (raw) => ({ task: String((raw as { task?: unknown } | null)?.task ?? "the change") }),
  startAt: "plan",
  nodes: {
    plan: compute({ run: ({ input }) => ({ steps: [`edit for ${input.task}`, "run the tests"] }) }),
    review: checkpoint({
      summary: ({ input }) => `Approve the plan for ${input.task}?`,
      timeoutMs: 60 * 60_000,
      answerSchema: {
        type: "object",
        properties: {
          approved: { type: "boolean", description: "Go ahead with the plan" },
          note: { type: "string", maxLength: 500 },
        },
        required: ["approved"],
        additionalProperties: false,
      },
    }),
    apply: compute({
      run: ({ outputs }) => {
        const answer = outputs.review as { approved: boolean; note?: string };
        return { applied: answer.approved, note: answer.note ?? null };
      },
    }),
    expire: compute({ run: () => ({ applied: false, note: "nobody answered within an hour" }) }),
  },
  edges: [
    { from: "plan", to: "review" },
    {
      from: "review",
      switch: { on: "$result.outcome", cases: { ok: "apply", timed_out: "expire" } },
    },
  ],
});
