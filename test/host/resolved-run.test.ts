import { describe, expect, test } from "vitest";
import { DEFINITION_SNAPSHOT_SCHEMA } from "../../src/protocol/definition-snapshot.ts";
import { resolvedRunFields, type ResolvedSource } from "../../src/host/resolved-run.ts";

const resolved = (root: unknown): ResolvedSource => ({
  ok: true,
  workflowName: "review",
  title: "Review",
  workflowSource: { root, mounted: [] },
  definitionDigest: "sha256:d",
  definition: { nodes: [] },
  input: { n: 1 },
  inputHash: "sha256:i",
  needsInteractive: false,
  needsAgent: true,
});

describe("resolvedRunFields()", () => {
  test("maps a resolved file source to the run's fields, referenced by its root path", () => {
    const fields = resolvedRunFields(
      resolved({ kind: "file", path: "/p/review.workflow.ts" }),
      "./review.workflow.ts",
      "/p",
    );
    expect(fields).toEqual({
      workflowName: "review",
      workflowRef: "/p/review.workflow.ts",
      title: "Review",
      projectPath: "/p",
      workflowSource: { root: { kind: "file", path: "/p/review.workflow.ts" }, mounted: [] },
      definitionDigest: "sha256:d",
      input: { n: 1 },
      inputHash: "sha256:i",
    });
  });

  test("the run's budget is its workflow's own, read from the definition snapshot", () => {
    const withBudget = (budget: unknown) => ({
      ...resolved({ kind: "builtin", id: "autodoc" }),
      definition: {
        schema: DEFINITION_SNAPSHOT_SCHEMA,
        name: "a",
        startAt: "s",
        nodes: { s: { kind: "compute" } },
        edges: {},
        budget,
      },
    });
    expect(resolvedRunFields(withBudget({ maxCostUsd: 2, maxTokens: 900 }), "a", "/p").budget)
      .toEqual({ maxCostUsd: 2, maxTokens: 900 });
    expect(resolvedRunFields(withBudget(undefined), "a", "/p")).not.toHaveProperty("budget");
    expect(resolvedRunFields(withBudget({ maxCostUsd: -1 }), "a", "/p")).not.toHaveProperty(
      "budget",
    );
  });

  test("a builtin is builtin:<id>; a source without a root keeps the requested name", () => {
    expect(resolvedRunFields(resolved({ kind: "builtin", id: "autodoc" }), "autodoc", "/p"))
      .toMatchObject({ workflowRef: "builtin:autodoc" });
    expect(resolvedRunFields(resolved(undefined), "review", "/p"))
      .toMatchObject({ workflowRef: "review" });
  });
});
