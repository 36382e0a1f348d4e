/**
 * install.sh picks the archive for the machine it runs on. `uname` (and macOS's `sysctl`, asked
 * whether the shell runs under Rosetta) are faked by scripts first on PATH, for every pair of
 * system and machine name the script knows and for some it does not. The release site is a
 * folder read through curl's file:// URLs; each archive holds a stand-in `pi-workflows` (a shell
 * script) that names its platform, so the installed program says which archive was chosen.
 */
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TARGETS } from "../../compile/targets.ts";
import { ROOT } from "../support/host.ts";
import { runProcess } from "./run-process.ts";

const VERSION = "9.9.9-test.1";
let tmp: string;

function stage(site: string, platforms: readonly string[]): void {
  mkdirSync(site, { recursive: true });
  const sums: string[] = [];
  for (const platform of platforms) {
    const name = `pi-workflows-${VERSION}-${platform}`;
    const dir = join(tmp, "stage", platform, name);
    mkdirSync(dir, { recursive: true });
    const program = join(dir, "pi-workflows");
    writeFileSync(program, `#!/bin/sh\necho "${VERSION} (${platform})"\n`);
    chmodSync(program, 0o755);
    execFileSync("tar", [
      "-cJf",
      join(site, `${name}.tar.xz`),
      "-C",
      join(tmp, "stage", platform),
      name,
    ]);
    const sum = execFileSync("sha256sum", [`${name}.tar.xz`], { cwd: site, encoding: "utf8" });
    sums.push(sum.trim());
  }
  writeFileSync(join(site, "SHA256SUMS"), `${sums.join("\n")}\n`);
}

/** A folder of fake `uname` and `sysctl` answering as the given machine. */
function fakeMachine(system: string, machine: string, translated = false): string {
  const dir = mkdtempSync(join(tmp, "fake-"));
  writeFileSync(
    join(dir, "uname"),
    `#!/bin/sh\ncase "$1" in -s) echo "${system}" ;; -m) echo "${machine}" ;; *) exit 2 ;; esac\n`,
  );
  writeFileSync(
    join(dir, "sysctl"),
    translated ? `#!/bin/sh\n[ "$2" = sysctl.proc_translated ] && echo 1\n` : "#!/bin/sh\nexit 1\n",
  );
  chmodSync(join(dir, "uname"), 0o755);
  chmodSync(join(dir, "sysctl"), 0o755);
  return dir;
}

async function install(site: string, fake: string, prefix: string) {
  return await runProcess("env", [
    "-i",
    `PATH=${fake}:/usr/bin:/bin`,
    `PREFIX=${prefix}`,
    `PI_WORKFLOWS_BASE_URL=file://${site}`,
    "sh",
    join(ROOT, "install.sh"),
  ]);
}

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "pwi-"));
  stage(join(tmp, "all"), TARGETS.map((t) => t.name));
  stage(join(tmp, "linux-only"), ["linux-x64", "linux-arm64"]);
});

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("install.sh chooses the archive from uname", () => {
  const pairs: [string, string, string][] = [
    ["Linux", "x86_64", "linux-x64"],
    ["Linux", "amd64", "linux-x64"],
    ["Linux", "aarch64", "linux-arm64"],
    ["Linux", "arm64", "linux-arm64"],
    ["Darwin", "arm64", "darwin-arm64"],
    ["Darwin", "aarch64", "darwin-arm64"],
    ["Darwin", "x86_64", "darwin-x64"],
    ["Darwin", "amd64", "darwin-x64"],
  ];
  it.each(pairs)("%s %s installs %s", async (system, machine, platform) => {
    const prefix = join(tmp, `p-${system}-${machine}`);
    const result = await install(join(tmp, "all"), fakeMachine(system, machine), prefix);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")[0]).toBe(`Installed pi-workflows ${VERSION} (${platform})`);
    const installed = readFileSync(join(prefix, "bin", "pi-workflows"), "utf8");
    expect(installed).toContain(`(${platform})`);
  });

  it("takes the arm64 build in a shell that Rosetta runs on Apple silicon", async () => {
    const prefix = join(tmp, "p-rosetta");
    const result = await install(join(tmp, "all"), fakeMachine("Darwin", "x86_64", true), prefix);
    expect(result.code).toBe(0);
    expect(result.stdout.split("\n")[0]).toBe(`Installed pi-workflows ${VERSION} (darwin-arm64)`);
  });

  it.each([
    ["FreeBSD", "amd64"],
    ["Linux", "riscv64"],
    ["Linux", "i686"],
    ["MINGW64_NT-10.0-22631", "x86_64"],
  ])("refuses %s %s in one line naming the builds that exist", async (system, machine) => {
    const prefix = join(tmp, `p-${system}-${machine}`);
    const result = await install(join(tmp, "all"), fakeMachine(system, machine), prefix);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toBe(
      `pi-workflows install: no pi-workflows build for ${system} ${machine}; builds exist for ${
        TARGETS.map((t) => t.name).join(", ")
      }; the npm package runs on Node >= 22.19 anywhere: npm install -g @osolmaz/pi-workflows\n`,
    );
    expect(existsSync(prefix)).toBe(false);
  });

  it("says which builds a release has when it lacks this machine's", async () => {
    const prefix = join(tmp, "p-missing");
    const site = join(tmp, "linux-only");
    const result = await install(site, fakeMachine("Darwin", "arm64"), prefix);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `pi-workflows install: the release at file://${site} has no build for darwin-arm64 (it has: linux-x64 linux-arm64); the npm package runs on Node >= 22.19 anywhere: npm install -g @osolmaz/pi-workflows\n`,
    );
    expect(existsSync(prefix)).toBe(false);
  });
});
