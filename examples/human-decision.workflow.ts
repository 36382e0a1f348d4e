/**
 * A protected human decision: only a person answers it (`pi-workflows answer` or
 * `/workflow answer`), never the model. After 10 minutes without an answer the host records the
 * `onTimeout` response (approve) instead, and a later answer is refused.
 *
 *   pi-workflows start examples/human-decision.workflow.ts --input-json '{"version":"2.0.0"}' --wait
 *   pi-workflows status <runId>                  # the title, the changes, the choices, the default
 *   pi-workflows answer <runId> approve          # or "Approve the release"
 *   pi-workflows answer <runId> --choice reject --input reason="tests are flaky"
 */
import {
  choice,
  compute,
  defineHumanChoices,
  defineWorkflow,
  humanDecision,
  humanDecisionEdge,
  textInput,
} from "@osolmaz/pi-workflows";

const choices = defineHumanChoices({
  approve: choice({ label: "Approve the release" }),
  reject: choice({
    label: "Reject with a reason",
    input: textInput({ name: "reason", prompt: "Why reject?", maxLength: 500 }),
  }),
});

export default defineWorkflow({
  name: "human-decision",
  input: (raw) => ({ version: String((raw as { version?: unknown } | null)?.version ?? "1.0.0") }),
  startAt: "prepare",
  nodes: {
    prepare: compute({ run: ({ input }) => ({ changes: [`release ${input.version}`] }) }),
    approval: humanDecision({
      audience: "owner",
      choices,
      onTimeout: { afterMs: 10 * 60_000, response: { choice: "approve" } },
      request: ({ input, outputs }) => ({
        title: `Release ${input.version}?`,
        subject: `release-${input.version}`,
        presentation: {
          schema: "pi-workflows.decision-presentation.v1",
          summary: `Approve release ${input.version}`,
          blocks: [{ kind: "bullets", items: (outputs.prepare as { changes: string[] }).changes }],
        },
      }),
    }),
    release: compute({ run: ({ input }) => ({ released: input.version }) }),
    abandon: compute({
      run: ({ outputs }) => ({
        released: null,
        reason: (outputs.approval as { text?: string }).text,
      }),
    }),
  },
  edges: [
    { from: "prepare", to: "approval" },
    humanDecisionEdge({
      from: "approval",
      choices,
      cases: { approve: "release", reject: "abandon" },
    }),
  ],
});
