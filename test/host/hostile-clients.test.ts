import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";

let home: TempHome;
let host: CliProcess;

beforeAll(async () => {
  home = tempHome({ PI_WORKFLOWS_HOST_PARTIAL_FRAME_MS: "1500" });
  seedRuns(home.stateDir, [{ runId: "run-1" }]);
  host = await startHostProcess(home.env);
});

afterAll(async () => {
  if (host) await stopProcess(host);
  await home?.cleanup();
});

/** A well-behaved client: `count` sequential requests, each answered correctly. */
async function politeClient(count: number): Promise<number> {
  const client = await RawClient.connect(home.socketPath);
  let answered = 0;
  for (let i = 0; i < count; i++) {
    const request = i % 2
      ? hostRequest("host.status")
      : hostRequest("run.status", { runId: "run-1" });
    const response = await client.request(request);
    expect(response.requestId).toBe(request.requestId);
    expect(response.outcome).toBe("accepted");
    answered++;
  }
  client.close();
  return answered;
}

describe("hostile clients", () => {
  it("keep other clients served: garbage, oversized, split and never-finished frames", async () => {
    // A never-finished frame: the connection stays open with half a request buffered.
    const stuck = await RawClient.connect(home.socketPath);
    stuck.write('{"schema":"pi-workflows.host-request.v1","requestId":"stuck');

    const garbage = (async () => {
      for (let i = 0; i < 20; i++) {
        const client = await RawClient.connect(home.socketPath);
        client.write(`not json at all ${i}\n`);
        const response = await client.next();
        expect(response).toMatchObject({
          requestId: null,
          outcome: "rejected",
          error: { code: "invalidJson" },
        });
        await client.waitClosed();
      }
    })();

    const oversized = (async () => {
      for (let i = 0; i < 3; i++) {
        const client = await RawClient.connect(home.socketPath);
        // 2 MiB without a newline, in chunks: rejected as soon as it passes 1 MiB.
        const chunk = "x".repeat(256 * 1024);
        for (let j = 0; j < 8 && !client.closed; j++) client.write(chunk);
        const response = await client.next();
        expect(response).toMatchObject({ outcome: "rejected", error: { code: "frameTooLarge" } });
        await client.waitClosed();
      }
    })();

    const split = (async () => {
      // A valid request delivered a few bytes at a time is still one request.
      const client = await RawClient.connect(home.socketPath);
      const text = JSON.stringify(hostRequest("run.status", { runId: "run-1" })) + "\n";
      for (let i = 0; i < text.length; i += 7) {
        client.write(text.slice(i, i + 7));
        await new Promise((r) => setImmediate(r));
      }
      expect((await client.next()).outcome).toBe("accepted");
      client.close();
    })();

    const polite = Promise.all(Array.from({ length: 6 }, () => politeClient(25)));
    const [served] = await Promise.all([polite, garbage, oversized, split]);
    expect(served.reduce((a, b) => a + b, 0)).toBe(150);

    // The stuck connection gets one answer, at its deadline (which a loaded machine may reach
    // while the others are still served): partialFrame, then it is closed.
    const response = await stuck.next(10_000);
    expect(response).toMatchObject({ outcome: "rejected", error: { code: "partialFrame" } });
    await stuck.waitClosed();
  });

  it("answers a frame nested deeper than its schemas can walk as invalidRequest", async () => {
    // 20,000 nested arrays (40 KB): JSON.parse takes them, valibot's walk overflows the stack.
    const levels = 20_000;
    const request = hostRequest("run.start", { payload: { workflow: "x", cwd: "/", input: 0 } });
    const text = JSON.stringify(request).replace(
      '"input":0',
      `"input":${"[".repeat(levels)}${"]".repeat(levels)}`,
    );
    const client = await RawClient.connect(home.socketPath);
    client.write(text + "\n");
    expect(await client.next()).toMatchObject({
      requestId: request.requestId,
      outcome: "rejected",
      error: {
        code: "invalidRequest",
        message: expect.stringContaining("nested too deep to check; keep JSON values within 200"),
      },
    });
    await client.waitClosed();
    expect(await politeClient(2)).toBe(2);
  });

  it("rejects a frame that is exactly one byte over 1 MiB and serves one at the limit", async () => {
    const base = hostRequest("host.status");
    const json = JSON.stringify(base);
    // Pad with insignificant whitespace after the object: still one JSON value.
    const atLimit = json + " ".repeat(1024 * 1024 - Buffer.byteLength(json));
    const client = await RawClient.connect(home.socketPath);
    client.write(atLimit + "\n");
    expect((await client.next()).outcome).toBe("accepted");
    client.write(atLimit + " \n");
    expect(await client.next()).toMatchObject({ error: { code: "frameTooLarge" } });
    await client.waitClosed();
  });

  it("answers 200 requests pipelined in one write", async () => {
    const client = await RawClient.connect(home.socketPath);
    const requests = Array.from({ length: 200 }, () => hostRequest("host.status"));
    client.write(requests.map((r) => JSON.stringify(r) + "\n").join(""));
    const ids = new Set<string>();
    for (let i = 0; i < requests.length; i++) ids.add((await client.next()).requestId);
    expect(ids.size).toBe(200);
    client.close();
  });

  it("at its connection limit answers busy, and host status and stop say so; then serves again", async () => {
    const held: RawClient[] = [];
    try {
      // Connections until the host answers busy (128 by default, less what earlier cases hold).
      let busy: any = null;
      for (let i = 0; i < 200 && busy === null; i++) {
        const client = await RawClient.connect(home.socketPath);
        const response = await client.request(hostRequest("host.status"));
        if (response.outcome === "accepted") held.push(client);
        else busy = response;
      }
      expect(busy).toMatchObject({
        requestId: null,
        outcome: "unavailable",
        error: { code: "hostBusy" },
      });
      const status = await runCliProcess(["host", "status"], home.env);
      expect(status.code).toBe(4);
      expect(status.stdout).toMatch(/^host: busy/m);
      expect(status.stdout).toMatch(/^socket: busy/m);
      const stop = await runCliProcess(["host", "stop"], home.env);
      expect(stop.code).toBe(4);
      expect(stop.stderr.trim()).toMatch(/^Host busy/);
    } finally {
      for (const client of held) client.close();
    }
    await waitFor(
      async () => (await runCliProcess(["host", "status"], home.env)).code === 0,
      "host status to answer again",
    );
  });
});
