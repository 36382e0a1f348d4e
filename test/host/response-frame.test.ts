import { describe, expect, it } from "vitest";
import { encodeFrame, FrameError } from "../../src/protocol/framing.ts";
import { failureResponse, successResponse } from "../../src/protocol/host-response.ts";
import { encodeResponseFrame } from "../../src/host/response-frame.ts";

function outcome(encode: () => Buffer): string {
  try {
    return `ok ${encode().toString("hex")}`;
  } catch (error) {
    const code = error instanceof FrameError ? error.code : (error as Error).name;
    return `throws ${code}: ${(error as Error).message}`;
  }
}

describe("encodeResponseFrame", () => {
  const responses: unknown[] = [
    successResponse({
      requestId: "r-1",
      hostEpoch: 3,
      revision: 7,
      receipt: { run: { runId: "run-1", title: "Zürich ✓ \u2028", paused: false }, attempts: [] },
    }),
    failureResponse({
      requestId: null,
      hostEpoch: 1,
      outcome: "rejected",
      code: "invalidRequest",
      message: "Request rejected: payload: bad",
    }),
    { value: Number.NaN },
  ];

  it("writes the bytes of the protocol's encodeFrame", () => {
    for (const response of responses) {
      expect(outcome(() => encodeResponseFrame(response))).toBe(
        outcome(() => encodeFrame(response)),
      );
    }
  });

  it("refuses a frame past the bound like encodeFrame, multibyte text included", () => {
    for (const maxBytes of [10, 40, 41, 42, 60, 200]) {
      const response = { receipt: "é".repeat(20) };
      expect(outcome(() => encodeResponseFrame(response, maxBytes))).toBe(
        outcome(() => encodeFrame(response, { maxBytes })),
      );
    }
    expect(() => encodeResponseFrame({ receipt: "é".repeat(20) }, 41)).toThrow(/Frame too large/);
  });
});
