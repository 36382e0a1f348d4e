/**
 * The Pi events the extension subscribes to. Pi runs some events as boundaries only while an
 * extension handles them, and a boundary costs every turn: with any `turn_end` handler, Pi 1.6.0
 * builds the session's whole context twice at every turn's end (a preview session of the branch,
 * its projection, the messages converted for the model; `emitBoundary`), on the path from every
 * tool result to the next model request. The extension has no use for that moment (the entry of a
 * step message is recorded at the next message's start or the model's reply's end), so it must not
 * subscribe to it; nor to the other boundaries and hooks Pi runs only for their handlers.
 */
import { describe, expect, it } from "vitest";
import piWorkflows from "../../src/extension/index.ts";
import type { PiExtensionApi } from "../../src/extension/pi-api.ts";

describe("the extension's Pi events", () => {
  it("handles no event Pi turns into a per-turn boundary or hook", () => {
    const events: string[] = [];
    const pi = {
      registerTool: () => {},
      registerCommand: () => {},
      sendMessage: () => {},
      on: (event: string) => {
        events.push(event);
        return () => {};
      },
    } as unknown as PiExtensionApi;
    piWorkflows(pi);
    expect(events).toContain("session_start");
    expect(events).toContain("message_start");
    for (
      const costly of [
        "turn_end",
        "agent_before_settle",
        "context",
        "tool_call",
        "tool_result",
        "before_provider_request",
      ]
    ) {
      expect(events).not.toContain(costly);
    }
  });
});
