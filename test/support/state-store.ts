/** Test fixtures for the state store: a temp state dir, a fake clock, deterministic ids. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock, sequentialIds } from "../../src/base/clock.ts";
import { closeStateStore, openStateStore, type StateStore } from "../../src/state/store.ts";
import { enqueueRun, type EnqueueRunOptions } from "../../src/state/transitions/run-enqueue.ts";
import { claimRunForLaunch, markWorkerLive } from "../../src/state/transitions/run-launch.ts";
import { recordNodeStarted } from "../../src/state/transitions/node-attempts.ts";
import type { Claim } from "../../src/state/claims.ts";
import { acquireHostClaim, type HostClaim } from "../../src/state/host-claim.ts";
import { TransitionError } from "../../src/state/errors.ts";
import { readRun } from "../../src/state/queries.ts";
import { expect } from "vitest";

export const HOST = "host-a";
export const TTL = 30_000;
/** The host epoch every fixture holds (run claims are fenced by it). */
export const HOST_EPOCH = 1;

export interface Fixture {
  dir: string;
  clock: FakeClock;
  store: StateStore;
  /** The fixture's host claim (epoch 1, a lease that outlives any test). */
  host: HostClaim;
  close(): void;
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), "pi-wf-state-"));
}

/** A fresh writable store in a new temp dir; `close()` closes it and removes the dir. */
export function openFixture(): Fixture {
  const dir = tempDir();
  const clock = new FakeClock();
  const store = openStateStore({ stateDir: join(dir, "state"), clock, ids: sequentialIds() });
  // Logic tests need no fsync per commit (the suite shares 2 cores with other suites); the
  // process-kill test and the benchmark keep the store's synchronous=FULL.
  store.db.exec("PRAGMA synchronous = NORMAL");
  const host = acquireHostClaim(store, { ownerId: HOST, token: "host-token", ttlMs: 2 ** 40 });
  return {
    dir,
    clock,
    store,
    host,
    close() {
      closeStateStore(store);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function enqueue(store: StateStore, extra: Partial<EnqueueRunOptions> = {}): string {
  return enqueueRun(store, {
    workflowName: "demo",
    workflowRef: "builtin:demo",
    title: "Demo run",
    projectPath: "/project",
    workflowSource: { root: { kind: "builtin", id: "demo" }, mounted: [] },
    definitionDigest: "sha256:def",
    input: { task: "x" },
    inputHash: "sha256:in",
    binding: { executionMode: "headless" },
    ...extra,
  }).runId;
}

let epochs = 0;

/** queued -> running/starting -> running/running; returns the host claim. */
export function launch(store: StateStore, runId: string, owner = HOST): Claim {
  const workerEpoch = `epoch-${++epochs}`;
  const { claim } = claimRunForLaunch(store, {
    runId,
    ownerId: owner,
    hostEpoch: HOST_EPOCH,
    token: store.ids.token(),
    ttlMs: TTL,
    workerEpoch,
    launchEnvelopeHash: "sha256:env",
  });
  markWorkerLive(store, claim, { workerEpoch, pid: 4242, startIdentity: "start-1" });
  return claim;
}

/** Launches and starts one attempt; returns the claim and attempt id. */
export function launchWithAttempt(
  store: StateStore,
  runId: string,
  effect: "pure" | "external" = "pure",
): { claim: Claim; attemptId: string } {
  const claim = launch(store, runId);
  const attemptId = store.ids.next("attempt");
  recordNodeStarted(store, claim, {
    attemptId,
    nodeId: "step",
    nodeKind: effect === "pure" ? "compute" : "action",
    effect,
    deadlineAt: null,
  });
  return { claim, attemptId };
}

/** A row-count snapshot of every table, to prove a refused write changed nothing. */
export function snapshot(store: StateStore): string {
  const tables = store.db.prepare(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
  ).all() as Array<{ name: string }>;
  return JSON.stringify(
    tables.map((t) => [t.name, store.db.prepare(`SELECT * FROM "${t.name}"`).all()]),
  );
}

/** `state/queue` of a run, e.g. `running/parked`. */
export function pairOf(store: StateStore, runId: string): string {
  const run = readRun(store, runId)!;
  return `${run.state}/${run.queueState}`;
}

/** Expects `fn` to throw a TransitionError matching `pattern` and to change nothing. */
export function expectRefused(store: StateStore, fn: () => unknown, pattern: RegExp): void {
  const before = snapshot(store);
  expect(fn).toThrow(TransitionError);
  expect(fn).toThrow(pattern);
  expect(snapshot(store)).toBe(before);
}
