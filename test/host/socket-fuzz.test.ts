import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HostResponseSchema } from "../../src/protocol/host-response.ts";
import { parseWith } from "../../src/protocol/schema-issues.ts";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { checkInvariants } from "../../src/state/invariants.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import { createFrameGenerator } from "../support/fuzz-frames.ts";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  requestOnce,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
} from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

const FRAMES = 10_000;
const SENDERS = 8;
const SEED = 20261130;

let home: TempHome;
let host: CliProcess;
const runIds = ["run-f1", "run-f2", "run-f3", "run-f4"];

beforeAll(async () => {
  home = tempHome();
  seedRuns(home.stateDir, runIds.map((runId) => ({ runId })));
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await home?.cleanup();
});

describe("socket fuzz", () => {
  it(`survives ${FRAMES} random and mutated frames, then serves and stays consistent`, async () => {
    const next = createFrameGenerator(SEED, runIds);
    const frames = Array.from({ length: FRAMES }, next);
    const kinds = new Map<string, number>();
    const outcomes = new Map<string, number>();
    let cursor = 0;

    // Each frame goes on its own connection: write it, end our side, read every answer until
    // the host closes. Every answer must be a well-formed response; no connection may hang.
    const sender = async () => {
      while (cursor < frames.length) {
        const frame = frames[cursor++];
        kinds.set(frame.kind, (kinds.get(frame.kind) ?? 0) + 1);
        const client = await RawClient.connect(home.socketPath);
        client.write(frame.bytes);
        client.socket.end();
        for (;;) {
          const response = await client.next(10_000);
          if (response === null) break;
          const parsed = parseWith(HostResponseSchema, response);
          expect(parsed.ok, `${frame.kind}: ${JSON.stringify(response).slice(0, 300)}`).toBe(true);
          outcomes.set(response.outcome, (outcomes.get(response.outcome) ?? 0) + 1);
        }
        client.close();
      }
    };
    await Promise.all(Array.from({ length: SENDERS }, sender));

    if (process.env.FUZZ_REPORT) {
      console.log(
        JSON.stringify({
          kinds: Object.fromEntries(kinds),
          outcomes: Object.fromEntries(outcomes),
        }),
      );
    }
    expect(host.child.exitCode).toBeNull();
    expect([...kinds.values()].reduce((a, b) => a + b, 0)).toBe(FRAMES);
    expect(outcomes.get("rejected")).toBeGreaterThan(FRAMES / 2);
    expect(outcomes.get("accepted")).toBeGreaterThan(100);

    const status = await requestOnce(home.socketPath, hostRequest("host.status"));
    expect(status).toMatchObject({ outcome: "accepted", receipt: { state: "running", epoch: 1 } });

    const store = openStateStore({
      stateDir: home.stateDir,
      clock: systemClock,
      ids: randomIds,
      readOnly: true,
    });
    try {
      expect(checkInvariants(store)).toEqual([]);
    } finally {
      closeStateStore(store);
    }
  });
});
