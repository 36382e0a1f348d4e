import { describe, expect, it } from "vitest";
import { maxSocketPathBytes, socketPathTooLong } from "../../src/host/socket-listener.ts";

describe("socketPathTooLong()", () => {
  it("holds Linux to 107 bytes and macOS to 103 (sun_path less its NUL)", () => {
    expect(maxSocketPathBytes("linux")).toBe(107);
    expect(maxSocketPathBytes("darwin")).toBe(103);
    const path = (bytes: number) => `/${"s".repeat(bytes - 1)}`;
    expect(socketPathTooLong(path(107), "linux")).toBeNull();
    expect(socketPathTooLong(path(103), "darwin")).toBeNull();
    expect(socketPathTooLong(path(104), "darwin")).toBe(
      "Cannot create the host socket: path is 104 bytes, the limit is 103 on darwin; use a " +
        "shorter PI_WORKFLOWS_STATE_DIR (e.g. ~/.pi-workflows)",
    );
    // Bytes, not characters: a name in another script takes more room.
    expect(socketPathTooLong(`/${"é".repeat(52)}`, "darwin")).toContain("path is 105 bytes");
  });
});
