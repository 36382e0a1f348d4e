/**
 * `schedule add --cron` without `--tz` takes this machine's zone; a TZ that Node cannot resolve
 * (it then runs in UTC) is refused with a line saying what to do, before any host is asked.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { runCliProcess, type TempHome, tempHome } from "../support/host.ts";

let home: TempHome | undefined;
afterEach(async () => {
  // Stops the host a failing case may have started.
  if (home) await runCliProcess(["host", "stop"], home.env, 30_000);
  await home?.cleanup();
  home = undefined;
});

it("refuses a cron without --tz when TZ names no zone this machine knows", async () => {
  home = tempHome({ TZ: "Not/AZone" });
  const result = await runCliProcess(
    ["schedule", "add", "nightly", "echo", "--cron", "0 9 * * *"],
    home.env,
    30_000,
  );
  expect(result.code, result.stderr).toBe(2);
  expect(result.stderr).toBe(
    "TZ=Not/AZone is not a time zone this machine knows, so the cron has no local zone: pass " +
      "--tz <zone> (an IANA name such as Europe/Berlin or UTC) or set TZ to one\n",
  );
  // Refused before the host was asked: none was started, no state written.
  expect(existsSync(join(home.stateDir, "state.sqlite"))).toBe(false);
});
