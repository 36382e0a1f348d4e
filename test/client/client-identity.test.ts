/**
 * A client keeps one id across reconnects and host restarts, so an idempotency key it used
 * before the host went away still names the same command afterwards (`adopted`, no second run).
 */
import { afterEach, describe, expect, it } from "vitest";
import { newClientId, stableClientId } from "../../src/client/client-id.ts";
import { createHostClient } from "../../src/client/host-client.ts";
import {
  killAll,
  ROOT,
  startHostProcess,
  stopProcess,
  type TempHome,
  tempHome,
} from "../support/host.ts";

let home: TempHome | undefined;

afterEach(async () => {
  await killAll();
  await home?.cleanup();
  home = undefined;
});

describe("client identity", () => {
  it("derives one id per scope and refuses a malformed one", () => {
    expect(stableClientId("pi-session:abc")).toBe(stableClientId("pi-session:abc"));
    expect(stableClientId("pi-session:abc")).not.toBe(stableClientId("pi-session:abd"));
    expect(stableClientId("pi-session:abc")).not.toContain("abc");
    expect(newClientId()).not.toBe(newClientId());
  });

  it("an idempotency key survives a host restart", async () => {
    home = tempHome({ PI_WORKFLOWS_HOST_IDLE_MS: "60000" });
    let host = await startHostProcess(home.env);
    const client = createHostClient({ env: home.env, autoStart: false });
    try {
      const start = {
        idempotencyKey: "start-once",
        payload: { workflow: "builtin:echo", input: { n: 1 }, cwd: ROOT },
      } as const;
      const first = await client.request("run.start", start);
      expect(first.outcome).toBe("accepted");
      await stopProcess(host);
      host = await startHostProcess(home.env);
      // A new request id on a new connection to a new host, same client and key.
      const again = await client.request("run.start", start);
      expect(again.outcome).toBe("adopted");
      expect((again.receipt as { run: { runId: string } }).run.runId).toBe(
        (first.receipt as { run: { runId: string } }).run.runId,
      );
      const list = await client.call("run.list", { payload: { all: true } });
      expect(list.runs).toHaveLength(1);
    } finally {
      client.close();
      await stopProcess(host);
    }
  });
});
