import { describe, expect, test } from "vitest";
import {
  FAILURE_CLASSES,
  FAILURE_SUMMARIES,
  failureMessage,
  HostUnavailableError,
  isFailureClass,
  oneLine,
  ProtocolRejectedError,
  WorkflowFailureError,
} from "../../src/protocol/failures.ts";

describe("failure classes", () => {
  test("exactly the spec's eight, each with its own summary", () => {
    expect([...FAILURE_CLASSES]).toEqual([
      "claimLost",
      "workerCrashed",
      "workerTimedOut",
      "hostUnavailable",
      "sourceChanged",
      "effectAmbiguous",
      "nodeFailed",
      "protocolRejected",
    ]);
    const summaries = FAILURE_CLASSES.map((c) => FAILURE_SUMMARIES[c]);
    expect(new Set(summaries).size).toBe(8);
    for (const summary of summaries) {
      expect(summary).toMatch(/^[A-Z][^\n]*[^.]$/);
    }
  });

  test("isFailureClass() accepts only the closed set", () => {
    for (const c of FAILURE_CLASSES) expect(isFailureClass(c)).toBe(true);
    for (const other of ["failed", "ClaimLost", "", null, 3]) {
      expect(isFailureClass(other)).toBe(false);
    }
  });

  test("failureMessage() is one bounded line: summary, colon, detail", () => {
    expect(failureMessage("nodeFailed")).toBe(FAILURE_SUMMARIES.nodeFailed);
    expect(failureMessage("nodeFailed", "  ")).toBe(FAILURE_SUMMARIES.nodeFailed);
    const message = failureMessage("workerCrashed", "exit code 3\n  at line 2");
    expect(message).toBe(`${FAILURE_SUMMARIES.workerCrashed}: exit code 3 at line 2`);
    expect(oneLine("x".repeat(5000)).length).toBe(1000);
  });

  test("errors carry their class across instanceof and after serialization", () => {
    const unavailable = new HostUnavailableError("no socket");
    expect(unavailable).toBeInstanceOf(WorkflowFailureError);
    expect(unavailable.failureClass).toBe("hostUnavailable");
    expect(unavailable.name).toBe("HostUnavailableError");
    expect(unavailable.message).toBe(`${FAILURE_SUMMARIES.hostUnavailable}: no socket`);
    const rejected = new ProtocolRejectedError("frameTooLarge", "too big");
    expect(rejected.failureClass).toBe("protocolRejected");
    expect(rejected.code).toBe("frameTooLarge");
    expect(rejected).not.toBeInstanceOf(HostUnavailableError);
  });
});
