/**
 * Branching: a switch on the output (`$.kind`) and a recovery route on `$result.outcome`.
 * Input `{ "n": 7 }`; `{ "n": -1 }` makes the check command fail and takes the recovery route.
 */
import { compute, defineWorkflow, shell } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "branch",
  input: (raw) => {
    const n = (raw as { n?: unknown } | null)?.n ?? 7;
    if (typeof n !== "number" || !Number.isInteger(n)) {
      throw new Error('input.n must be an integer, e.g. {"n": 7}');
    }
    return { n };
  },
  startAt: "check",
  nodes: {
    // `test` exits non-zero for negative numbers: the node fails and the $result switch recovers.
    check: shell({
      exec: ({ input }) => ({ command: "test", args: [String(input.n), "-ge", "0"] }),
      parse: () => ({ valid: true }),
    }),
    classify: compute({
      run: ({ input }) => ({ kind: input.n % 2 === 0 ? "even" : "odd" }),
    }),
    even: compute({ run: ({ input }) => ({ result: `${input.n} is even` }) }),
    odd: compute({ run: ({ input }) => ({ result: `${input.n} is odd` }) }),
    recover: compute({
      run: ({ input, results }) => ({
        result: `${input.n} is negative`,
        failure: results.check?.error?.code ?? null,
      }),
    }),
  },
  edges: [
    {
      from: "check",
      switch: {
        on: "$result.outcome",
        cases: { ok: "classify", failed: "recover", timed_out: "recover" },
      },
    },
    { from: "classify", switch: { on: "$.kind", cases: { even: "even", odd: "odd" } } },
  ],
});
