/**
 * Composition: `review` (examples/lib/review.ts) is mounted under the name `review`; its nodes
 * run as `review/inspect`, ... and the parent continues from whichever exit it left through.
 * Input `{ "text": "..." }`.
 */
import { compute, defineWorkflow, includedResult, includeWorkflow } from "@osolmaz/pi-workflows";
import review from "./lib/review.ts";

export default defineWorkflow({
  name: "include",
  input: (raw) => ({ text: String((raw as { text?: unknown } | null)?.text ?? "ship it") }),
  startAt: "prepare",
  includes: {
    review: includeWorkflow(review, {
      input: ({ outputs }) => ({ text: (outputs.prepare as { text: string }).text }),
    }),
  },
  nodes: {
    prepare: compute({ run: ({ input }) => ({ text: input.text.trim() }) }),
    publish: compute({
      run: ({ outputs }) => {
        const result = includedResult<"approved" | "rejected">(review, outputs.review);
        return { published: true, exit: result.exit, output: result.output };
      },
    }),
    shelve: compute({
      run: ({ outputs }) => ({ published: false, review: outputs.review }),
    }),
  },
  edges: [
    { from: "prepare", to: "review" },
    { from: "review.approved", to: "publish" },
    { from: "review.rejected", to: "shelve" },
  ],
});
