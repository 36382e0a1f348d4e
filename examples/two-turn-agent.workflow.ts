/**
 * Two model turns: draft a plan, then review it. The second step's `validate` rejects outputs
 * the model can fix, with a message saying what to send. Needs an agent executor (an
 * interactive Pi session or headless Pi); input `{ "task": "..." }`.
 */
import { agent, compute, defineWorkflow } from "@osolmaz/pi-workflows";

export default defineWorkflow({
  name: "two-turn-agent",
  input: (raw) => {
    const task = typeof raw === "string" ? raw : (raw as { task?: unknown } | null)?.task;
    if (typeof task !== "string" || task.trim() === "") {
      throw new Error('input.task must be a non-empty string, e.g. {"task": "add a README"}');
    }
    return { task: task.trim() };
  },
  presentationPrompt: "Tell the user the plan in two sentences.",
  startAt: "draft",
  nodes: {
    draft: agent({
      statusDetail: "draft a plan",
      prompt: ({ input }) => `Write a short plan (3-5 steps) for: ${input.task}`,
      expectedOutput: '{ "steps": ["..."] }',
      validate: (output) => {
        const steps = (output as { steps?: unknown })?.steps;
        if (!Array.isArray(steps) || steps.length < 1 || steps.some((s) => typeof s !== "string")) {
          throw new Error('send {"steps": ["step one", "step two"]} with at least one string step');
        }
      },
    }),
    review: agent({
      statusDetail: "review the plan",
      timeoutMs: 5 * 60_000,
      prompt: ({ outputs }) =>
        `Review this plan and name its biggest risk:\n${JSON.stringify(outputs.draft)}`,
      expectedOutput: '{ "risk": "...", "ok": true }',
      validate: (output) => {
        const o = output as { risk?: unknown; ok?: unknown };
        if (typeof o?.risk !== "string" || typeof o?.ok !== "boolean") {
          throw new Error('send {"risk": "<text>", "ok": true|false}');
        }
      },
    }),
    summary: compute({
      run: ({ outputs }) => ({ plan: outputs.draft, review: outputs.review }),
    }),
  },
  edges: [
    { from: "draft", to: "review" },
    { from: "review", to: "summary" },
  ],
});
