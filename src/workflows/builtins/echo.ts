/** `echo`: returns its input as is. The smallest built-in: a check that the catalog works. */
import { defineWorkflow } from "../define-workflow.ts";
import { compute } from "../nodes.ts";

export const echoWorkflow = defineWorkflow({
  name: "echo",
  title: "Echo the input",
  startAt: "echo",
  nodes: {
    echo: compute({ run: ({ input }) => ({ input }), statusDetail: "echo" }),
  },
});
