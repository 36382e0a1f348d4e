import { describe, expect, test } from "vitest";
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

  test("a builtin is builtin:<id>; a source without a root keeps the requested name", () => {
    expect(resolvedRunFields(resolved({ kind: "builtin", id: "autodoc" }), "autodoc", "/p"))
      .toMatchObject({ workflowRef: "builtin:autodoc" });
    expect(resolvedRunFields(resolved(undefined), "review", "/p"))
      .toMatchObject({ workflowRef: "review" });
  });
});
