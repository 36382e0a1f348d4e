/**
 * The workflow and controller the session-binding tests run: `ask` is one agent step that wants
 * `{"n": <number>}`; the `asker` controller ensures one interactive child of it per generation
 * (`spec.interactive: false` asks for a headless one) and settles with what it sees, `Ready`
 * once the child succeeded.
 */
export const ASK = `
import { agent, defineWorkflow } from "pi-workflows";
export default defineWorkflow({
  name: "ask",
  startAt: "ask",
  nodes: {
    ask: agent({
      prompt: ({ input }) => "Give a number for " + input.topic,
      validate: (output) => {
        if (typeof output?.n !== "number") throw new Error('send {"n": <number>}');
        return { n: output.n };
      },
    }),
  },
  edges: [],
});
`;

export const ASKER = `
import { conditionTrue, defineController } from "pi-workflows";
export default defineController({
  name: "asker",
  initialStatus: () => ({ child: "none" }),
  async reconcile(ctx, resource) {
    const child = await ctx.workflows.ensure({
      requestKey: "ask-" + resource.metadata.generation,
      workflow: "ask",
      input: { topic: resource.spec.topic },
      interactive: resource.spec.interactive ?? true,
    });
    return ctx.settled({
      controllerStatus: { child: child.state, reason: child.blockedReason ?? null, runId: child.runId ?? null },
      ...(child.state === "succeeded" ? { conditions: [conditionTrue("Ready", "Answered")] } : {}),
    });
  },
});
`;
