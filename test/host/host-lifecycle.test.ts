import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import net from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { randomIds, systemClock } from "../../src/base/clock.ts";
import { acquireHostClaim, readHostEpoch } from "../../src/state/host-claim.ts";
import { closeStateStore, openStateStore } from "../../src/state/store.ts";
import {
  hostRequest,
  killAll,
  RawClient,
  requestOnce,
  runCliProcess,
  spawnCli,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";

const homes: TempHome[] = [];
function home(env: NodeJS.ProcessEnv = {}): TempHome {
  const h = tempHome(env);
  homes.push(h);
  return h;
}

afterEach(async () => {
  await killAll();
  for (const h of homes.splice(0)) await h.cleanup();
});

describe("host run", () => {
  it("serves host.status on a 0600 socket in a 0700 state dir and stops cleanly on SIGTERM", async () => {
    const h = home();
    const host = await startHostProcess(h.env);
    expect(statSync(h.stateDir).mode & 0o777).toBe(0o700);
    expect(statSync(h.socketPath).mode & 0o777).toBe(0o600);
    const response = await requestOnce(h.socketPath, hostRequest("host.status"));
    expect(response).toMatchObject({
      schema: "pi-workflows.host-response.v1",
      outcome: "accepted",
      hostEpoch: 1,
      receipt: { state: "running", epoch: 1, socket: "available", activeWorkers: 0 },
    });
    await stopProcess(host);
    expect((await host.exited).code).toBe(0);
    expect(host.stderr()).toContain("host.stopped epoch=1 reason=SIGTERM");
    expect(existsSync(h.socketPath)).toBe(false);

    // The claim was released, so the next host starts at once with the next epoch.
    const next = await startHostProcess(h.env);
    const status = await requestOnce(h.socketPath, hostRequest("host.status"));
    expect(status.receipt.epoch).toBe(2);
    await stopProcess(next);
  });

  it("refuses a second live host with a clear message", async () => {
    const h = home();
    const first = await startHostProcess(h.env);
    const second = await runCliProcess(["host", "run"], h.env);
    expect(second.code).toBe(3);
    expect(second.stderr.trim().split("\n").at(-1)).toMatch(
      /^Host already running: host epoch 1 holds the state database/,
    );
    const status = await requestOnce(h.socketPath, hostRequest("host.status"));
    expect(status.outcome).toBe("accepted");
    await stopProcess(first);
  });

  it("a host that still answers is refused before the epoch is touched", async () => {
    // Another host answers on the socket while its lease has lapsed (it was busy or frozen and
    // has resumed). A starting host must not take the next epoch and then give up: that would
    // fence the answering host and leave none.
    const h = home();
    const first = await startHostProcess(h.env);
    await stopProcess(first); // leaves epoch 1 released and no socket
    const store = openStateStore({ stateDir: h.stateDir, clock: systemClock, ids: randomIds });
    const { epoch } = acquireHostClaim(store, { ownerId: "busy-host", token: "t", ttlMs: 1 });
    const impostor = net.createServer((socket) => socket.on("data", () => socket.write("{}\n")));
    await new Promise<void>((resolve) => impostor.listen(h.socketPath, resolve));
    try {
      const second = await runCliProcess(["host", "run"], h.env);
      expect(second.code).toBe(3);
      expect(second.stderr).toMatch(/Host already running: host epoch 2 holds the state database/);
      expect(readHostEpoch(store)).toMatchObject({ epoch });
    } finally {
      impostor.close();
      closeStateStore(store);
    }
  });

  it("lets exactly one of several hosts started at the same instant win", async () => {
    const h = home();
    const hosts = [0, 1, 2].map(() => spawnCli(["host", "run"], h.env));
    const results = await Promise.all(
      hosts.map((host) =>
        Promise.race([
          host.waitForStderr("host.ready").then(() => "ready" as const),
          host.exited.then(({ code }) => code),
        ]).catch(() => host.exited.then(({ code }) => code))
      ),
    );
    expect(results.filter((r) => r === "ready")).toHaveLength(1);
    expect(results.filter((r) => r === 3)).toHaveLength(2);
    const status = await requestOnce(h.socketPath, hostRequest("host.status"));
    expect(status.receipt.epoch).toBe(1);
  });

  it("takes over a SIGKILLed host at once, with a higher epoch, its lease notwithstanding", async () => {
    // The default 15 s host lease: the killed host's claim is still live when the next starts.
    const h = home();
    const old = await startHostProcess(h.env);
    old.kill("SIGKILL");
    await old.exited;
    expect(existsSync(h.socketPath)).toBe(true); // stale socket left behind
    // Doctor says what it knows: the lease runs on, but no host answers (as `host status` says).
    const dead = await runCliProcess(["doctor"], h.env);
    expect(dead.stdout).toMatch(
      /^Host epoch: 1 \(lease held until \d{4}-\d\d-\d\dT[\d:.]+Z, host not answering\)$/m,
    );
    expect(JSON.parse((await runCliProcess(["doctor", "--json"], h.env)).stdout)).toMatchObject({
      hostEpoch: { epoch: 1, live: true },
      hostAnswering: false,
    });

    // The recorded pid and start identity prove the holder gone: the first candidate takes over.
    const next = await startHostProcess(h.env);
    expect(next.stderr()).toContain("host.claimed epoch=2");
    expect(next.stderr()).toContain("takeover=holderGone");

    const client = await RawClient.connect(h.socketPath);
    const stale = await client.request(hostRequest("host.status", { hostEpoch: 1 }));
    expect(stale).toMatchObject({
      outcome: "rejected",
      error: { code: "staleEpoch" },
      hostEpoch: 2,
    });
    expect(stale.error.message).toContain("host epoch 1");
    const current = await client.request(hostRequest("host.status", { hostEpoch: 2 }));
    expect(current).toMatchObject({ outcome: "accepted", receipt: { epoch: 2 } });
    client.close();
    expect((await runCliProcess(["doctor"], h.env)).stdout).toMatch(/^Host epoch: 2 \(running\)$/m);
    await stopProcess(next);
  });

  it("a host that lost its epoch while stopped exits without touching its successor", async () => {
    const h = home({ PI_WORKFLOWS_HOST_CLAIM_TTL_MS: "800" });
    const old = await startHostProcess(h.env);
    old.kill("SIGSTOP");
    try {
      // The frozen host neither renews nor answers: after its lease expires a new host wins.
      const next = (await waitFor(
        async () => {
          const candidate = spawnCli(["host", "run"], h.env);
          const result = await Promise.race([
            candidate.waitForStderr("host.ready").then(() => "ready" as const),
            candidate.exited.then(({ code }) => code),
          ]).catch(() => candidate.exited.then(({ code }) => code));
          return result === "ready" ? candidate : null;
        },
        "a new host to take over",
        15_000,
        50,
      ))!;
      expect(next.stderr()).toContain("host.claimed epoch=2");
      old.kill("SIGCONT");
      const { code } = await old.exited;
      expect(code).toBe(1);
      expect(old.stderr()).toContain("host.claimLost epoch=1");
      // The successor's socket is still there and still answers.
      const status = await requestOnce(h.socketPath, hostRequest("host.status"));
      expect(status).toMatchObject({ outcome: "accepted", receipt: { epoch: 2 } });
      await stopProcess(next);
    } finally {
      old.kill("SIGCONT");
    }
  });

  it("stops on host.stop after answering it", async () => {
    const h = home();
    const host = await startHostProcess(h.env);
    const client = await RawClient.connect(h.socketPath);
    // Two frames in one write: the second arrives after the host began stopping.
    const stop = hostRequest("host.stop");
    const late = hostRequest("run.list");
    const status = hostRequest("host.status");
    client.write([stop, late, status].map((r) => JSON.stringify(r) + "\n").join(""));
    const answers = [await client.next(), await client.next(), await client.next()];
    const answer = (request: Record<string, unknown>) =>
      answers.find((a) => a.requestId === request.requestId);
    expect(answer(stop)).toMatchObject({ outcome: "accepted", receipt: { stopping: true } });
    expect(answer(late)).toMatchObject({
      outcome: "unavailable",
      error: { code: "hostStopping" },
    });
    expect(answer(status)).toMatchObject({
      outcome: "accepted",
      receipt: { state: "stopping", socket: "unavailable" },
    });
    await client.waitClosed();
    expect((await host.exited).code).toBe(0);
    expect(host.stderr()).toContain("reason=host.stop");
    expect(existsSync(h.socketPath)).toBe(false);
  });

  it("exits when idle, but not while a client is connected", async () => {
    const h = home({ PI_WORKFLOWS_HOST_IDLE_MS: "300" });
    const host = await startHostProcess(h.env);
    const client = await RawClient.connect(h.socketPath);
    // Several idle periods with a client attached: the host must still be there.
    await new Promise((r) => setTimeout(r, 1200));
    expect(host.child.exitCode).toBeNull();
    expect((await client.request(hostRequest("host.status"))).outcome).toBe("accepted");
    client.close();
    const { code } = await host.exited;
    expect(code).toBe(0);
    expect(host.stderr()).toContain("reason=idle");
    expect(existsSync(h.socketPath)).toBe(false);
  });

  it("refuses a state directory whose socket path would be too long", async () => {
    const h = home();
    const long = join(h.root, "d".repeat(60), "e".repeat(60));
    const result = await runCliProcess(["host", "run"], { ...h.env, PI_WORKFLOWS_STATE_DIR: long });
    expect(result.code).toBe(1);
    expect(result.stderr.trim().split("\n").at(-1)).toMatch(
      /^Cannot create the host socket: path is \d+ bytes, the limit is 107 on linux; use a shorter PI_WORKFLOWS_STATE_DIR \(e\.g\. ~\/\.pi-workflows\)$/,
    );
  });

  it("rejects a bad environment setting with one line", async () => {
    const h = home({ PI_WORKFLOWS_HOST_IDLE_MS: "soon" });
    const result = await runCliProcess(["host", "run"], h.env);
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'Invalid PI_WORKFLOWS_HOST_IDLE_MS: expected a whole number, got "soon"',
    );
  });

  it("rejects a bad process backend with one line, as a setting", async () => {
    const h = home({ PI_WORKFLOWS_PROCESS_BACKEND: "junk" });
    const result = await runCliProcess(["host", "run"], h.env);
    // A usage error (exit 2) like the setting above, not a platform the host cannot run on (1).
    expect(result.code).toBe(2);
    expect(result.stderr.trim()).toBe(
      'Invalid PI_WORKFLOWS_PROCESS_BACKEND: expected proc or ps, got "junk"',
    );
  });
});
