import { afterEach, describe, expect, test } from "vitest";
import { successResponse } from "../../src/protocol/host-response.ts";
import { encodeResponseFrame } from "../../src/host/response-frame.ts";
import { cachedStatus, rememberStatus } from "../../src/host/status-cache.ts";
import { enqueue, type Fixture, openFixture } from "../support/state-store.ts";

let f: Fixture;
afterEach(() => f?.close());

describe("the cached plain run.status answer", () => {
  test("answers any request id with the exact frame, until the next commit", () => {
    f = openFixture();
    const runId = enqueue(f.store);
    const fresh = successResponse({
      requestId: "first",
      hostEpoch: 1,
      revision: 1,
      receipt: { run: { runId, note: 'ü "quoted"' } },
    });
    const remembered = rememberStatus(f.store, runId, fresh);
    expect(encodeResponseFrame(remembered)).toEqual(encodeResponseFrame({ ...fresh }));
    const hit = cachedStatus(f.store, runId, 'second "id"');
    expect(hit).toEqual({ ...fresh, requestId: 'second "id"' });
    expect(encodeResponseFrame(hit)).toEqual(
      encodeResponseFrame({ ...fresh, requestId: 'second "id"' }),
    );
    expect(cachedStatus(f.store, "run-other", "x")).toBeUndefined();
    enqueue(f.store); // any commit
    expect(cachedStatus(f.store, runId, "third")).toBeUndefined();
  });
});
