/**
 * The real-Pi harness works: a package installed with `pi install <dir>` into a temp agent dir
 * loads, the real `pi --mode rpc` talks only to the fake model on 127.0.0.1, the model's tool
 * call reaches the package's tool and the tool result reaches the model, and Pi stops by PID.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type FakeModel, startFakeModel } from "../support/fake-model.ts";
import { createPiSandbox, FAKE_MODEL_ID, type PiSandbox } from "../support/pi-sandbox.ts";
import { startPi, stopAllPi } from "../support/pi-rpc.ts";
import { jsonObjectsIn, submitContractIn } from "../support/step-responder.ts";

const ECHO_PACKAGE = fileURLToPath(new URL("./fixtures/echo-package", import.meta.url));

describe("real Pi against the fake model", () => {
  let model: FakeModel;
  let sandbox: PiSandbox;

  beforeAll(async () => {
    model = await startFakeModel({
      lifetimeMs: 120_000,
      script: (request) =>
        request.lastRole === "tool"
          ? { kind: "text", text: `Tool said ${request.lastToolResult}` }
          : { kind: "tool", name: "echo_tool", args: { text: "hello" } },
    });
    sandbox = createPiSandbox({ modelBaseUrl: model.baseUrl });
    await sandbox.install(ECHO_PACKAGE);
  });

  afterAll(async () => {
    await stopAllPi();
    await sandbox?.cleanup();
    await model?.close();
  });

  it("installs the package into the temp agent dir the way users do", () => {
    const packages = sandbox.settings().packages as string[];
    expect(packages).toHaveLength(1);
    expect(join(sandbox.agentDir, packages[0])).toBe(ECHO_PACKAGE);
  });

  it("runs a prompt with a tool call round trip and stops by PID", async () => {
    const pi = await startPi(sandbox);
    const commands = await pi.command({ type: "get_commands" });
    expect(JSON.stringify(commands.data)).toContain("echo-ping");

    const from = pi.records.length;
    const response = await pi.prompt("Please call echo_tool.");
    expect(response.data).toEqual({ disposition: "started" });
    await pi.waitForSettled(from);
    const last = await pi.command({ type: "get_last_assistant_text" });
    expect(last.data).toEqual({ text: "Tool said ECHO:hello" });

    expect(model.requests).toHaveLength(2);
    expect(model.requests[0].model).toBe(FAKE_MODEL_ID);
    expect(model.requests[0].toolNames).toContain("echo_tool");
    expect(model.requests[0].lastUserText).toBe("Please call echo_tool.");
    expect(model.requests[1].lastRole).toBe("tool");

    // A command's custom message starts no model turn.
    const handled = await pi.prompt("/echo-ping x");
    expect(handled.data).toEqual({ disposition: "handled" });
    expect(model.requests).toHaveLength(2);

    expect(await pi.stop()).toEqual({ code: 0, signal: null });
    expect(await sandbox.killStragglers()).toEqual([]);
  });
});

describe("step contract reading", () => {
  it("finds the submit JSON in a step message whatever the prose around it", () => {
    const text = [
      "Write the plan. Use {braces} freely.",
      "---",
      "Workflow step contract (workflow: demo, step: plan, attempt: att-1)",
      'Update: {"action":"update","step":"plan","attempt":"att-1","update":{"type":"note"}}',
      'Submit: {"action":"submit","step":"plan","attempt":"att-1","output":"<your output>"}',
    ].join("\n");
    expect(submitContractIn(text)).toEqual({
      action: "submit",
      step: "plan",
      attempt: "att-1",
      output: "<your output>",
    });
    expect(jsonObjectsIn(text).map((value) => value.action)).toEqual(["update", "submit"]);
    expect(submitContractIn("no contract here {not json}")).toBeUndefined();
  });
});
