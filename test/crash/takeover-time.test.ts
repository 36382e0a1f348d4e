/**
 * Issue 13's takeover target with real processes: `kill -9` of the host while a run's worker is
 * inside a node, then one ordinary client command. A new host must serve it and the run must move
 * again without waiting out any lease (host lease 15 s, run leases 30 s). The figures are printed
 * (median and range); `npm run bench -- takeover` measures more tries. The claim here is that no
 * lease is waited out, not a time: the leases are ten minutes long and the bound a tenth of that,
 * so a wait on one fails the test while a loaded machine's slow starts do not (8 s against the
 * default 15 s host lease did at load 14: 9.27 s).
 */
import { afterAll, expect, it } from "vitest";
import {
  killAndTime,
  setUpTakeover,
  summary,
  type TakeoverSample,
  type TakeoverSetup,
} from "../support/takeover-timing.ts";

const TRIES = 4;
const LEASE_MS = 600_000;
let setup: TakeoverSetup | undefined;
afterAll(() => setup?.cleanup());

it(`a SIGKILLed host is replaced and its run moves again at once (${TRIES} kills)`, async () => {
  setup = await setUpTakeover({
    ...process.env,
    PI_WORKFLOWS_HOST_CLAIM_TTL_MS: String(LEASE_MS),
    PI_WORKFLOWS_CLAIM_TTL_MS: String(LEASE_MS),
  });
  const samples: TakeoverSample[] = [];
  for (let i = 0; i < TRIES; i++) samples.push(await killAndTime(setup));
  const serving = summary(samples.map((s) => s.servingMs));
  const moving = summary(samples.map((s) => s.movingMs));
  console.log(
    `takeover over ${TRIES} kills: serving ${JSON.stringify(serving)} ms, moving ${
      JSON.stringify(moving)
    } ms`,
  );
  for (const sample of samples) {
    expect(sample.servingMs).toBeLessThan(LEASE_MS / 10);
    expect(sample.movingMs).toBeLessThan(LEASE_MS / 10);
  }
  // The run is still the one run, running, never failed by the kills.
  const status = await setup.client.call("run.status", { runId: setup.runId });
  expect(status.run.state).toBe("running");
}, 180_000);
