import { existsSync, globSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { fileKey, orderByDuration, readDurations } from "./file-order.ts";
import { SHARED_FILES } from "./shared-files.ts";
import { cachedSeconds } from "./update-durations.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const file = (key: string, size = 100) => ({ item: key, key, size });

describe("the order test files start in", () => {
  it("starts the longest first, whichever project runs it", () => {
    const seconds = {
      "default:test/a.test.ts": 3,
      "default:test/b.test.ts": 80,
      "ps:test/a.test.ts": 40,
      "default:test/c.test.ts": 0.1,
    };
    const files = Object.keys(seconds).map((key) => file(key));
    expect(orderByDuration(files, seconds)).toEqual([
      "default:test/b.test.ts",
      "ps:test/a.test.ts",
      "default:test/a.test.ts",
      "default:test/c.test.ts",
    ]);
  });

  it("starts files of unknown length first, the larger first, then by name", () => {
    const seconds = { "default:test/long.test.ts": 100 };
    const files = [
      file("default:test/long.test.ts", 90_000),
      file("default:test/new-b.test.ts", 10),
      file("default:test/new-small.test.ts", 5),
      file("default:test/new-a.test.ts", 10),
    ];
    expect(orderByDuration(files, seconds)).toEqual([
      "default:test/new-a.test.ts",
      "default:test/new-b.test.ts",
      "default:test/new-small.test.ts",
      "default:test/long.test.ts",
    ]);
  });

  it("keys a run without projects as the default project's", () => {
    expect(fileKey("", "/r", "/r/test/a.test.ts")).toBe("default:test/a.test.ts");
    expect(fileKey("ps", "/r", "/r/test/a.test.ts")).toBe("ps:test/a.test.ts");
  });

  it("reads vitest's cached durations in seconds, a run without projects as default", () => {
    const cache = JSON.stringify({
      version: "4.1.12",
      results: [
        [":test/a.test.ts", { duration: 83_680.4, failed: false }],
        ["ps:test/b.test.ts", { duration: 6_258, failed: true }],
        ["ps:test/c.test.ts", { failed: false }],
      ],
    });
    expect(cachedSeconds(cache)).toEqual({
      "default:test/a.test.ts": 83.7,
      "ps:test/b.test.ts": 6.3,
    });
  });

  it("lists only test files that exist, with durations in seconds", () => {
    const listed = readDurations();
    expect(Object.keys(listed).length).toBeGreaterThan(100);
    for (const [key, seconds] of Object.entries(listed)) {
      expect(key).toMatch(/^(default|ps|shared):test\/.+\.test\.ts$/);
      expect(existsSync(join(ROOT, key.replace(/^[^:]*:/, ""))), key).toBe(true);
      expect(seconds).toBeGreaterThanOrEqual(0);
    }
  });

  it("runs in the shared process only files that exist and start nothing, load no workflow, run no CLI", () => {
    // What a file of the shared project must not import (test/support/shared-files.ts says why).
    const processWide =
      /child_process|support\/(host|pi-sandbox|pi-rpc|headless-env|supervision|harness-per-test|controllers|takeover-timing|temp-root|compile-cache|interactive-session|cli-in-process)\.ts|loadWorkflow|loadController|workflows\/sources|src\/testing|enableCompileCache|process\.on\(/;
    for (const pattern of SHARED_FILES) {
      const files = globSync(pattern, { cwd: ROOT });
      expect(files.length, pattern).toBeGreaterThan(0);
      for (const file of files) {
        expect(readFileSync(join(ROOT, file), "utf8"), file).not.toMatch(processWide);
      }
    }
    // Each brace names a file: a misspelt one matches nothing and would run isolated, unnoticed.
    const named = SHARED_FILES.flatMap((p) => {
      const brace = p.match(/\{([^}]*)\}/);
      return brace ? brace[1]!.split(",").map((n) => p.replace(brace[0], n)) : [p];
    });
    expect(named.filter((file) => !existsSync(join(ROOT, file)))).toEqual([]);
  });
});
