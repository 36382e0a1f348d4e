/**
 * Issue 13's takeover target with real processes: `kill -9` of the host while a run's worker is
 * inside a node, then one ordinary client command. A new host must serve it and the run must move
 * again without waiting out any lease (host lease 15 s, run leases 30 s). The figures are printed
 * (median and range); `npm run bench -- takeover` measures more tries. The bound asserted here is
 * loose for a loaded CI machine but far below any lease, so waiting on one fails the test.
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
let setup: TakeoverSetup | undefined;
afterAll(() => setup?.cleanup());

it(`a SIGKILLed host is replaced and its run moves again at once (${TRIES} kills)`, async () => {
  setup = await setUpTakeover();
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
    expect(sample.servingMs).toBeLessThan(8_000);
    expect(sample.movingMs).toBeLessThan(8_000);
  }
  // The run is still the one run, running, never failed by the kills.
  const status = await setup.client.call("run.status", { runId: setup.runId });
  expect(status.run.state).toBe("running");
}, 180_000);
