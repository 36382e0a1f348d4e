import { describe, expect, test } from "vitest";
import {
  parseResolveRequest,
  parseResolveResult,
  RESOLVE_REQUEST_SCHEMA,
  RESOLVE_RESULT_SCHEMA,
} from "../../src/protocol/resolve-messages.ts";
import { fingerprint } from "../../src/protocol/canonical-json.ts";

const digest = fingerprint({ any: "thing" });

describe("resolve channel", () => {
  test("a request with and without agentDir", () => {
    const request = {
      schema: RESOLVE_REQUEST_SCHEMA,
      workflow: "hello",
      input: { a: 1 },
      cwd: "/p",
    };
    expect(parseResolveRequest(request).ok).toBe(true);
    expect(parseResolveRequest({ ...request, agentDir: "/home/u/.pi/agent" }).ok).toBe(true);
    expect(parseResolveRequest({ ...request, cwd: "p" })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^resolve\.cwd: /),
    });
    expect(parseResolveRequest({ ...request, workflow: "" }).ok).toBe(false);
  });

  test("both result shapes, and the mismatched ones refused", () => {
    const ok = {
      schema: RESOLVE_RESULT_SCHEMA,
      ok: true,
      workflowName: "hello",
      title: null,
      workflowSource: { root: { kind: "builtin", id: "hello", revision: "1" }, mounted: [] },
      definitionDigest: digest,
      input: null,
      inputHash: digest,
      needsInteractive: false,
      definition: {
        schema: "pi-workflows.definition-snapshot.v1",
        name: "hello",
        startAt: "greet",
        nodes: { greet: { kind: "compute", timeoutMs: "default", effect: "pure" } },
        edges: {},
      },
      needsAgent: true,
    };
    const failed = {
      schema: RESOLVE_RESULT_SCHEMA,
      ok: false,
      code: "workflowNotFound",
      message: "Workflow not found: hello",
    };
    expect(parseResolveResult(ok).ok).toBe(true);
    expect(parseResolveResult(failed).ok).toBe(true);
    expect(parseResolveResult({ ...failed, ok: true }).ok).toBe(false);
    expect(parseResolveResult({ ...ok, definition: { ...ok.definition, nodes: [] } }).ok).toBe(
      false,
    );
    expect(parseResolveResult({ ...ok, inputHash: "nope" })).toMatchObject({
      ok: false,
      error: expect.stringMatching(/^result\.inputHash: /),
    });
    expect(parseResolveResult([]).ok).toBe(false);
  });
});
