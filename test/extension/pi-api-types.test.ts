/**
 * The extension's structural view of Pi's API (src/extension/pi-api.ts) matches the real Pi
 * 1.6.0 types: the factory is a valid `ExtensionFactory`, the tool a valid `ToolDefinition`. This
 * file fails to typecheck (`npm test` runs tsc) when Pi's API drifts from what the extension uses.
 */
import { describe, expect, it } from "vitest";
import type { ExtensionFactory, ToolDefinition } from "@earendil-works/pi-coding-agent";
import piWorkflows from "../../src/extension/index.ts";
import { workflowTool } from "../../src/extension/workflow-tool.ts";

describe("Pi API shapes", () => {
  it("types the factory and the tool as Pi does", () => {
    const factory: ExtensionFactory = piWorkflows;
    const tool: ToolDefinition = workflowTool(() => null);
    expect(typeof factory).toBe("function");
    expect(tool.name).toBe("workflow");
  });
});
