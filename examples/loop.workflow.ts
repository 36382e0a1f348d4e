/**
 * A bounded loop: `tick` runs until it has counted to `times`, then `finish` reports.
 * `maxSteps` bounds the loop across continuations even if the exit condition never holds.
 */
import { compute, defineWorkflow } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "loop",
  input: (raw) => {
    const times = (raw as { times?: unknown } | null)?.times ?? 3;
    if (typeof times !== "number" || !Number.isInteger(times) || times < 1 || times > 20) {
      throw new Error('input.times must be an integer from 1 to 20, e.g. {"times": 3}');
    }
    return { times };
  },
  maxSteps: 30,
  startAt: "tick",
  nodes: {
    tick: compute({
      statusDetail: "count",
      run: ({ input, outputs }) => {
        const count = ((outputs.tick as { count?: number } | undefined)?.count ?? 0) + 1;
        return { count, done: count >= input.times };
      },
    }),
    finish: compute({
      run: ({ outputs, state }) => ({
        counted: (outputs.tick as { count: number }).count,
        stepsUsed: state.stepsUsed,
      }),
    }),
  },
  edges: [
    { from: "tick", switch: { on: "$.done", cases: { false: "tick", true: "finish" } } },
  ],
});
