import { describe, expect, test } from "vitest";
import {
  DEFINITION_SNAPSHOT_SCHEMA,
  type DefinitionSnapshot,
} from "../../src/protocol/definition-snapshot.ts";
import { parseResolveResult, RESOLVE_RESULT_SCHEMA } from "../../src/protocol/resolve-messages.ts";
import type { Budget } from "../../src/protocol/budget.ts";
import type { SourceRoot } from "../../src/protocol/worker-launch.ts";
import { resolvedRunFields, type ResolvedSource } from "../../src/host/resolved-run.ts";

const definition = (budget?: Budget): DefinitionSnapshot => ({
  schema: DEFINITION_SNAPSHOT_SCHEMA,
  name: "review",
  startAt: "s",
  nodes: { s: { kind: "compute" } },
  edges: {},
  ...(budget ? { budget } : {}),
});

const resolved = (root: SourceRoot, budget?: Budget): ResolvedSource => ({
  ok: true,
  workflowName: "review",
  title: "Review",
  workflowSource: { root, mounted: [] },
  definitionDigest: `sha256:${"d".repeat(64)}`,
  definition: definition(budget),
  input: { n: 1 },
  inputHash: `sha256:${"b".repeat(64)}`,
  needsInteractive: false,
  needsAgent: true,
});

const file: SourceRoot = {
  kind: "file",
  path: "/p/review.workflow.ts",
  hash: `sha256:${"f".repeat(64)}`,
};

describe("resolvedRunFields()", () => {
  test("maps a resolved file source to the run's fields, referenced by its root path", () => {
    expect(resolvedRunFields(resolved(file), "/p")).toEqual({
      workflowName: "review",
      workflowRef: "/p/review.workflow.ts",
      title: "Review",
      projectPath: "/p",
      workflowSource: { root: file, mounted: [] },
      definitionDigest: `sha256:${"d".repeat(64)}`,
      input: { n: 1 },
      inputHash: `sha256:${"b".repeat(64)}`,
    });
  });

  test("a builtin is builtin:<id>", () => {
    const builtin: SourceRoot = { kind: "builtin", id: "autodoc", revision: "r1" };
    expect(resolvedRunFields(resolved(builtin), "/p")).toMatchObject({
      workflowRef: "builtin:autodoc",
    });
  });

  test("the run's budget is its workflow's own, read from the definition snapshot", () => {
    expect(resolvedRunFields(resolved(file, { maxCostUsd: 2, maxTokens: 900 }), "/p").budget)
      .toEqual({ maxCostUsd: 2, maxTokens: 900 });
    expect(resolvedRunFields(resolved(file), "/p")).not.toHaveProperty("budget");
  });

  test("a resolver answer whose snapshot carries a bad budget is refused when it arrives", () => {
    const { definition: good, ...rest } = resolved(file);
    const answer = (d: unknown) => ({ schema: RESOLVE_RESULT_SCHEMA, ...rest, definition: d });
    expect(parseResolveResult(answer(good)).ok).toBe(true);
    const bad = parseResolveResult(answer({ ...good, budget: { maxCostUsd: -1 } }));
    expect(bad.ok).toBe(false);
  });
});
