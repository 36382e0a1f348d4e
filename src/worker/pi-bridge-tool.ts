/**
 * The `workflow` tool a headless Pi child offers its model: the same tool name and the same
 * `submit` / `update` arguments as the origin-session tool (the step message shows them exactly,
 * see src/workflows/step-contract.ts), restricted to those two actions. The parameters are plain
 * JSON Schema (what Pi's TypeBox schemas are); the worker checks the step and attempt and the
 * output itself, so every field but `action` is optional here and a missing one gets the
 * contract's actionable refusal rather than a schema error.
 */
import type { BridgeTool } from "../protocol/pi-bridge-messages.ts";

export const BRIDGE_TOOL: BridgeTool = {
  name: "workflow",
  label: "Workflow",
  description: "Report progress on, or submit the output of, the pi-workflows step you were " +
    "given. Use exactly the step and attempt ids the step message shows.",
  promptSnippet: "workflow: submit (or report progress on) the current workflow step",
  promptGuidelines: [
    "Call the workflow tool's submit action once the step's work is done, with the step and " +
    "attempt from the step message; if it is rejected, fix the output and submit again.",
  ],
  parameters: {
    type: "object",
    additionalProperties: false,
    required: ["action"],
    properties: {
      action: {
        type: "string",
        enum: ["update", "submit"],
        description: "submit: hand in the step's output; update: report progress",
      },
      step: { type: "string", description: "The step id from the step message" },
      attempt: { type: "string", description: "The attempt id from the step message" },
      output: { description: "submit: the step's output (JSON, as the step message asks)" },
      update: {
        type: "object",
        description: "update: a progress report",
        additionalProperties: false,
        required: ["type", "data"],
        properties: {
          type: { type: "string", description: "e.g. status or progress" },
          key: { type: "string" },
          data: { description: "any JSON" },
        },
      },
    },
  },
};
