/**
 * Finding the user's Pi for headless runs: PI_WORKFLOWS_PI, then config.json's `pi`, then `pi`
 * on PATH; the version is what `--version` prints, checked once per Pi and runtime (an npm
 * package that says 1.6.3 may still not start); Pi older than 1.6.0 is refused. From the CLI, a workflow with agent steps
 * and no usable Pi is refused at once with one line and exit 8, and nothing is queued; a
 * workflow without agent steps still runs without Pi.
 */
import { chmodSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { discoverPi } from "../../src/worker/pi-command.ts";
import { killAll, ROOT, runCliProcess, type TempHome, tempHome } from "../support/host.ts";

const homes: TempHome[] = [];
afterEach(async () => {
  await killAll();
});
afterAll(async () => {
  for (const home of homes.splice(0)) await home.cleanup();
});

function home(): TempHome {
  const h = tempHome();
  homes.push(h);
  mkdirSync(h.stateDir, { recursive: true });
  return h;
}

function executable(path: string, text: string): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
  return path;
}

/**
 * An npm-style install: `<root>/bin/pi` linked to the package's bin, which answers `--version`
 * (`script`: what it does instead) and counts its runs in `<root>/runs`.
 */
function npmInstall(
  root: string,
  version: string,
  name = "@earendil-works/pi-coding-agent",
  script = `[ "$1" = --version ] && echo ${version} && exit 0\nexit 9`,
) {
  const pkg = join(root, "lib/node_modules", name);
  mkdirSync(join(pkg, "dist/bundle"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name, version }));
  executable(
    join(pkg, "dist/bundle/cli.js"),
    `#!/bin/sh\necho x >> ${JSON.stringify(join(root, "runs"))}\n${script}\n`,
  );
  mkdirSync(join(root, "bin"), { recursive: true });
  symlinkSync(join(pkg, "dist/bundle/cli.js"), join(root, "bin/pi"));
  return join(root, "bin");
}

describe("discoverPi()", () => {
  it("finds pi on PATH and asks it for --version once per Pi and runtime", () => {
    const h = home();
    const bin = npmInstall(join(h.root, "npm"), "1.6.3");
    const runs = () => readFileSync(join(h.root, "npm/runs"), "utf8").split("\n").length - 1;
    const env = { PATH: `/nonexistent:${bin}` };
    const found = discoverPi({ env, stateDir: h.stateDir });
    expect(found).toEqual({ ok: true, pi: { command: join(bin, "pi"), version: "1.6.3" } });
    expect(discoverPi({ env, stateDir: h.stateDir })).toEqual(found);
    expect(runs()).toBe(1);
    // Another Pi at the same path (a reinstall) is asked again.
    const cli = join(
      h.root,
      "npm/lib/node_modules/@earendil-works/pi-coding-agent/dist/bundle/cli.js",
    );
    writeFileSync(cli, `${readFileSync(cli, "utf8")}# reinstalled\n`);
    expect(discoverPi({ env, stateDir: h.stateDir })).toEqual(found);
    expect(runs()).toBe(2);
  });

  it("refuses a Pi whose package is new enough but which cannot start on its runtime", () => {
    const h = home();
    // What Pi 1.6 prints when the Node its #! line finds is too old to load it.
    const bin = npmInstall(
      join(h.root, "npm"),
      "1.6.3",
      undefined,
      'echo "SyntaxError: Invalid regular expression flags (Node 18)" >&2\nexit 1',
    );
    const found = discoverPi({ env: { PATH: bin }, stateDir: h.stateDir });
    expect(found).toMatchObject({ ok: false, code: "piBroken" });
    if (!found.ok) {
      expect(found.message).toContain(
        "did not report its version (`--version` exited 1: SyntaxError: Invalid regular",
      );
    }
  });

  it("refuses Pi older than 1.6.0, the old package name included", () => {
    const h = home();
    const old = npmInstall(join(h.root, "old"), "0.73.1", "@mariozechner/pi-coding-agent");
    const found = discoverPi({ env: { PATH: old }, stateDir: h.stateDir });
    expect(found.ok).toBe(false);
    if (!found.ok) {
      expect(found.code).toBe("piTooOld");
      expect(found.message).toMatch(
        /^Pi 0\.73\.1 at .* is too old: headless runs need Pi >= 1\.6\.0;/,
      );
    }
  });

  it("asks a command outside a package for --version, and names a broken one", () => {
    const h = home();
    const ok = executable(join(h.root, "w/pi"), '#!/bin/sh\n[ "$1" = --version ] && echo 1.7.0\n');
    expect(discoverPi({ env: { PATH: dirname(ok) }, stateDir: h.stateDir })).toEqual({
      ok: true,
      pi: { command: ok, version: "1.7.0" },
    });
    const broken = executable(join(h.root, "b/pi"), "#!/bin/sh\nexit 1\n");
    const found = discoverPi({ env: { PATH: dirname(broken) }, stateDir: h.stateDir });
    expect(found).toMatchObject({ ok: false, code: "piBroken" });
  });

  it("prefers PI_WORKFLOWS_PI, then config.json, and never falls back from a named command", () => {
    const h = home();
    const onPath = npmInstall(join(h.root, "path"), "1.6.0");
    const named = npmInstall(join(h.root, "named"), "1.8.0");
    const configured = npmInstall(join(h.root, "configured"), "1.9.0");
    writeFileSync(join(h.stateDir, "config.json"), JSON.stringify({ pi: join(configured, "pi") }));
    const env = { PATH: onPath };
    expect(discoverPi({ env, stateDir: h.stateDir })).toMatchObject({ pi: { version: "1.9.0" } });
    expect(
      discoverPi({
        env: { ...env, PI_WORKFLOWS_PI: "named/bin/pi" },
        stateDir: h.stateDir,
        cwd: h.root,
      }),
    ).toMatchObject({ pi: { command: join(named, "pi"), version: "1.8.0" } });
    const missing = discoverPi({
      env: { ...env, PI_WORKFLOWS_PI: "/nowhere/pi" },
      stateDir: h.stateDir,
    });
    expect(missing).toMatchObject({ ok: false, code: "piNotFound" });
    if (!missing.ok) {
      expect(missing.message).toBe(
        'Pi not found: PI_WORKFLOWS_PI names "/nowhere/pi", which is not an executable file; ' +
          "install Pi with `npm install -g @earendil-works/pi-coding-agent` or set " +
          "PI_WORKFLOWS_PI to its path",
      );
    }
    writeFileSync(join(h.stateDir, "config.json"), JSON.stringify({ pie: "x" }));
    expect(discoverPi({ env, stateDir: h.stateDir })).toMatchObject({
      ok: false,
      code: "invalidConfig",
      message: "Invalid config.json in the state directory: config.pie: unknown field",
    });
    // One that is there and cannot be read is refused too, never taken for no config.
    rmSync(join(h.stateDir, "config.json"));
    mkdirSync(join(h.stateDir, "config.json"));
    expect(discoverPi({ env, stateDir: h.stateDir })).toMatchObject({
      ok: false,
      code: "invalidConfig",
      message: "Invalid config.json in the state directory: it cannot be read (EISDIR); make " +
        "it a file you can read, or remove it",
    });
  });

  it("says what it looked for when there is no Pi at all", () => {
    const h = home();
    const found = discoverPi({ env: { PATH: "/nonexistent" }, stateDir: h.stateDir });
    expect(found).toMatchObject({ ok: false, code: "piNotFound" });
    if (!found.ok) {
      expect(found.message).toMatch(
        /^Pi not found: looked for PI_WORKFLOWS_PI, a pi entry in the state directory's config\.json and pi on PATH; install Pi/,
      );
    }
  });
});

describe("start without a usable Pi", () => {
  const TWO_TURN = join(ROOT, "examples/two-turn-agent.workflow.ts");
  const HELLO = join(ROOT, "examples/hello.workflow.ts");

  it("refuses a workflow with agent steps at once (exit 8, one line) and queues nothing", async () => {
    const h = home();
    const env: NodeJS.ProcessEnv = { ...h.env, PATH: `${dirname(process.execPath)}:/usr/bin:/bin` };
    delete env.PI_WORKFLOWS_PI;
    const refused = await runCliProcess(["start", TWO_TURN, "a task", "--wait"], env);
    expect(refused.code).toBe(8);
    expect(refused.stdout).toBe("");
    expect(refused.stderr.trim().split("\n")).toHaveLength(1);
    expect(refused.stderr).toMatch(/^Pi not found: looked for PI_WORKFLOWS_PI/);
    // Model arguments say the user wants Pi: refused before the host is asked.
    const withModel = await runCliProcess(["start", HELLO, "--model", "m"], env);
    expect(withModel.code).toBe(8);
    const old = npmInstall(join(h.root, "old"), "1.5.0");
    const tooOld = await runCliProcess(["start", TWO_TURN, "a task"], {
      ...env,
      PI_WORKFLOWS_PI: join(old, "pi"),
    });
    expect(tooOld.code).toBe(8);
    expect(tooOld.stderr).toMatch(/^Pi 1\.5\.0 at .* is too old/);
    const list = JSON.parse((await runCliProcess(["list", "--all", "--json"], env)).stdout);
    expect(list.runs).toEqual([]);

    // Without agent steps no Pi is needed.
    const hello = await runCliProcess(
      ["start", HELLO, "--input-json", '{"name":"Ada"}', "--wait", "--json"],
      env,
    );
    expect(hello.code).toBe(0);
    expect(JSON.parse(hello.stdout).run.state).toBe("completed");
    await runCliProcess(["host", "stop"], env);
  });
});
