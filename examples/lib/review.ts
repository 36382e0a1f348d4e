/** An included workflow with two named exits. Parents leave it through `review.<exit>`. */
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "review",
  input: (raw) => {
    const text = (raw as { text?: unknown } | null)?.text;
    if (typeof text !== "string") throw new Error("input.text must be a string");
    return { text };
  },
  startAt: "inspect",
  nodes: {
    inspect: compute({
      run: ({ input }) => ({ verdict: input.text.length <= 40 ? "short" : "long" }),
    }),
    approve: compute({ run: ({ input }) => ({ text: input.text }) }),
    reject: compute({
      run: ({ input }) => ({ reason: `${input.text.length} characters is too long` }),
    }),
  },
  edges: [
    { from: "inspect", switch: { on: "$.verdict", cases: { short: "approve", long: "reject" } } },
  ],
  exits: {
    approved: { from: "approve" },
    rejected: {
      from: "reject",
      validate: (output) => {
        if (typeof (output as { reason?: unknown })?.reason !== "string") {
          throw new Error("a rejection needs a reason");
        }
      },
    },
  },
});
