/**
 * `run.logs` of one node: a node the workflow does not have is refused with its nodes; one that
 * has not run yet answers empty, and a `logs --follow` polling it reads and decodes the run's
 * workflow definition once, not at every poll.
 */
import { afterEach, describe, expect, it } from "vitest";
import { fingerprint } from "../../src/protocol/canonical-json.ts";
import { HOST_REQUEST_SCHEMA, parseHostRequest } from "../../src/protocol/host-request.ts";
import { runLogsQuery } from "../../src/host/run-logs.ts";
import type { HostRuntime } from "../../src/host/host-runtime.ts";
import { compileWorkflow } from "../../src/workflows/compile.ts";
import { enqueue, type Fixture, HOST_EPOCH, openFixture } from "../support/state-store.ts";
import { reviewLoop } from "../render/fixtures/review-loop.ts";

let fx: Fixture | undefined;
afterEach(() => {
  fx?.close();
  fx = undefined;
});

let requests = 0;

function logsRequest(runId: string, nodeId: string) {
  const parsed = parseHostRequest({
    schema: HOST_REQUEST_SCHEMA,
    requestId: `req-${++requests}`,
    clientId: "client-logs",
    operation: "run.logs",
    runId,
    payload: { nodeId },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed));
  return parsed.request;
}

describe("run.logs of one node", () => {
  it("reads the definition once for a node that has not run, however often it is asked", () => {
    fx = openFixture();
    const snapshot = compileWorkflow(reviewLoop).snapshot;
    const runId = enqueue(fx.store, {
      definition: snapshot,
      definitionDigest: fingerprint(snapshot),
    });
    const rt = { store: fx.store, epoch: HOST_EPOCH } as HostRuntime;
    const stats = fx.store.readStats = { statements: 0, rows: 0, payloadRows: 0 };

    for (let poll = 0; poll < 5; poll++) {
      const answer = runLogsQuery(rt, logsRequest(runId, "review"));
      expect(answer.outcome).toBe("accepted");
      expect(answer.receipt).toMatchObject({ runId, steps: [] });
    }
    // The first poll read the snapshot; the four after it did not.
    expect(stats.payloadRows).toBe(1);

    // A typo is still refused, with the nodes, from the same remembered ids.
    expect(() => runLogsQuery(rt, logsRequest(runId, "reveiw"))).toThrow(
      /workflow has no node "reveiw"; its nodes: .*review.*\. Did you mean "review"\?/,
    );
    expect(stats.payloadRows).toBe(1);
  });
});
