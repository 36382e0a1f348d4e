import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  hostStartCommand,
  nodeVersionUsable,
  pickNode,
  probeNodeOnPath,
} from "../../src/extension/host-launch.ts";

const dir = mkdtempSync(join(tmpdir(), "pi-wf-launch-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const never = () => {
  throw new Error("PATH was probed");
};

describe("hostStartCommand()", () => {
  it("runs the host on the Node that runs Pi when it is new enough", () => {
    const command = hostStartCommand({}, import.meta.url, never);
    expect(command.command).toBe(process.execPath);
    expect(command.args.slice(-2)).toEqual(["host", "run"]);
  });

  it("runs PI_WORKFLOWS_EXECUTABLE, and refuses one that is not executable in one line", () => {
    const binary = join(dir, "pi-workflows");
    writeFileSync(binary, "#!/bin/sh\n");
    chmodSync(binary, 0o755);
    expect(hostStartCommand({ PI_WORKFLOWS_EXECUTABLE: binary }, import.meta.url, never))
      .toEqual({ command: binary, args: ["host", "run"] });
    chmodSync(binary, 0o644);
    expect(() => hostStartCommand({ PI_WORKFLOWS_EXECUTABLE: binary }, import.meta.url, never))
      .toThrow(
        "PI_WORKFLOWS_EXECUTABLE names no executable file: install pi-workflows (install.sh) " +
          "or unset it to run the host on Node",
      );
  });
});

describe("pickNode()", () => {
  it("falls back to node on PATH when Pi's own Node is too old or Pi runs on another runtime", () => {
    expect(pickNode("22.19.0", {}, never)).toBeNull();
    expect(pickNode("20.11.1", {}, () => "v24.1.0")).toBe("node");
    expect(pickNode(null, {}, () => "v22.19.0")).toBe("node");
  });

  it("names what to install when no usable Node is found", () => {
    expect(() => pickNode("20.11.1", {}, () => "v18.20.0")).toThrow(
      "The workflow host needs Node.js 22.19.0 or newer: Pi runs on Node 20.11.1 and node on " +
        "PATH is v18.20.0; install Node.js 22.19+ (nodejs.org, or 'brew install node' on macOS) " +
        "or set PI_WORKFLOWS_EXECUTABLE to the pi-workflows executable",
    );
    expect(() => pickNode(null, {}, () => null)).toThrow(
      /^The workflow host needs Node\.js 22\.19\.0 or newer: Pi does not run on Node and there is no node on PATH; install/,
    );
  });

  it("probes node --version on the PATH it is given", () => {
    const bin = join(dir, "bin");
    mkdirSync(bin);
    expect(probeNodeOnPath({ PATH: bin })).toBeNull();
    writeFileSync(join(bin, "node"), "#!/bin/sh\necho v20.11.1\n");
    chmodSync(join(bin, "node"), 0o755);
    expect(probeNodeOnPath({ PATH: bin })).toBe("v20.11.1");
  });
});

describe("nodeVersionUsable()", () => {
  it("compares major and minor against 22.19", () => {
    for (const ok of ["22.19.0", "v22.19.1", "22.20.0", "v23.0.0", "26.10.0"]) {
      expect(nodeVersionUsable(ok), ok).toBe(true);
    }
    for (const bad of ["22.18.9", "v20.19.0", "v18.20.4", "", "node", "v22"]) {
      expect(nodeVersionUsable(bad), bad).toBe(false);
    }
  });
});
