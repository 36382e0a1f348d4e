/**
 * The main demo: a compute step, a shell step and a final compute step.
 *
 *   pi-workflows start examples/hello.workflow.ts --wait
 *   pi-workflows start examples/hello.workflow.ts --input-json '{"name": "Ada"}' --wait
 */
import { compute, defineWorkflow, shell } from "@osolmaz/pi-workflows";
import { greeting, normalizeName } from "./lib/greet.ts";

export default defineWorkflow({
  name: "hello",
  title: ({ input }) => `Say hello to ${input.name}`,
  input: (raw) => ({ name: normalizeName(raw) }),
  startAt: "greet",
  nodes: {
    greet: compute({
      statusDetail: "compose the greeting",
      run: ({ input }) => ({ message: greeting(input.name) }),
    }),
    echo: shell({
      statusDetail: "echo through a real process",
      timeoutMs: 10_000,
      exec: ({ outputs }) => ({
        command: "printf",
        args: ["%s\n", (outputs.greet as { message: string }).message],
      }),
      parse: (result) => ({ printed: result.stdout.trim(), exitCode: result.exitCode }),
    }),
    finish: compute({
      run: ({ outputs }) => ({
        message: (outputs.echo as { printed: string }).printed,
        steps: ["greet", "echo", "finish"],
      }),
    }),
  },
  edges: [
    { from: "greet", to: "echo" },
    { from: "echo", to: "finish" },
  ],
});
