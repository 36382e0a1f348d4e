import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type CliProcess,
  hostRequest,
  RawClient,
  ROOT,
  runCliProcess,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
  waitFor,
} from "../support/host.ts";
import { seedRuns } from "../support/host-seed.ts";
import { queryState } from "../support/state-db.ts";

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

  it("answers a value nested past 200 levels as invalidRequest, and stores nothing", async () => {
    // 201 levels, one past the bound; 20,000 (40 KB), which JSON.parse takes and a recursive
    // walk of the schemas would overflow the stack on: the same one-line answer.
    for (const levels of [201, 20_000]) {
      const request = hostRequest("run.start", {
        payload: { workflow: "examples/hello.workflow.ts", cwd: ROOT, input: 0 },
      });
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
          message: "Request rejected: payload.input: nested deeper than 200 arrays or objects; " +
            "send a flatter value (e.g. a list of items, each naming its parent)",
        },
      });
      await client.waitClosed();
    }
    expect(await politeClient(2)).toBe(2);
    expect(queryState(home.stateDir, "SELECT run_id FROM runs ORDER BY run_id")).toEqual([
      { run_id: "run-1" },
    ]);
  });

  it("refuses at apply a workflow file's schedule whose input nests past 200 levels", async () => {
    // The file itself loads (the bound is not a load-time refusal); the schedule would start
    // every run with that input, so apply refuses it and stores nothing.
    const dir = join(home.root, "deep-schedule");
    mkdirSync(dir);
    writeFileSync(
      join(dir, "deep.workflow.ts"),
      `import { compute, defineWorkflow } from "@osolmaz/pi-workflows";
let input: unknown = 0;
for (let i = 0; i < 201; i++) input = [input];
export default defineWorkflow({
  name: "deep",
  schedule: { every: "1h", input },
  startAt: "a",
  nodes: { a: compute({ run: () => 1 }) },
  edges: [],
});
`,
    );
    const client = await RawClient.connect(home.socketPath);
    const response = await client.request(
      hostRequest("schedule.apply", {
        payload: { workflow: join(dir, "deep.workflow.ts"), cwd: dir },
      }),
    );
    client.close();
    expect(response).toMatchObject({
      outcome: "rejected",
      error: {
        code: "invalidSchedule",
        message: "Invalid schedule in the workflow file: schedule.input: nested deeper than 200 " +
          "arrays or objects; send a flatter value (e.g. a list of items, each naming its parent)",
      },
    });
    expect(queryState(home.stateDir, "SELECT name FROM schedules")).toEqual([]);
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
