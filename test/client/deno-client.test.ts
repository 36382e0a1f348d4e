import { expect, test } from "vitest";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../../", import.meta.url));
const fixture = fileURLToPath(new URL("./fixtures/roundtrip.ts", import.meta.url));

test("the client, framing and schemas run unchanged under deno", () => {
  const out = execFileSync(`${root}node_modules/.bin/deno`, ["run", "-A", fixture], {
    cwd: root,
    encoding: "utf8",
    timeout: 30_000,
    env: { ...process.env, DENO_NO_UPDATE_CHECK: "1" },
  });
  expect(JSON.parse(out.trim())).toEqual({ epoch: 7, listOutcome: "rejected" });
});
