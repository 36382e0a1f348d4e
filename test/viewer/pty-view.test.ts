/**
 * Drives the real full-screen `pi-workflows view` in a pseudo-terminal made by `script`
 * (util-linux, present on every Debian/Ubuntu machine): open, move, open a run, replay, back,
 * quit; a resize redraws; SIGTERM restores the terminal too. "Restored" is checked by the shell
 * inside the terminal comparing `stty -g` before and after, and by the escape sequences.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { CLI, ROOT, type TempHome, tempHome } from "../support/host.ts";
import { seedViewerRuns } from "./seed-runs.ts";

let home: TempHome | undefined;
let child: ChildProcess | undefined;
afterEach(async () => {
  if (child?.exitCode === null && child.pid) process.kill(child.pid, "SIGKILL");
  await home?.cleanup();
  home = child = undefined;
});

interface Pty {
  output(): string;
  /** Waits until `text` appears in the output written after `from`. */
  waitFor(text: string, from?: number, timeoutMs?: number): Promise<number>;
  send(keys: string): void;
  exited: Promise<number | null>;
  pid: number;
}

function openPty(env: NodeJS.ProcessEnv, viewArgs: string): Pty {
  const inner =
    `stty rows 40 cols 100; S=$(stty -g); "${process.execPath}" "${CLI}" view ${viewArgs}; ` +
    `R=$?; [ "$(stty -g)" = "$S" ] && echo TERMINAL-RESTORED; echo VIEW-EXIT=$R`;
  child = spawn("script", ["-qfec", inner, "/dev/null"], { cwd: ROOT, env, stdio: "pipe" });
  let out = "";
  const waiters = new Set<() => void>();
  child.stdout!.on("data", (d) => {
    out += d;
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((res) => child!.on("exit", (code) => res(code)));
  return {
    output: () => out,
    pid: child.pid!,
    send: (keys) => child!.stdin!.write(keys),
    exited,
    waitFor(text, from = 0, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const at = out.indexOf(text, from);
          if (at >= 0) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(at + text.length);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(
            new Error(
              `Timed out waiting for ${JSON.stringify(text)} in:\n${visible(out.slice(from))}`,
            ),
          );
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
  };
}

function visible(text: string): string {
  // deno-lint-ignore no-control-regex -- strips the terminal's escape sequences
  return text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").slice(-3000);
}

/** The viewer's own process: a descendant of `script` whose command line runs `view`. */
function viewerPid(root: number): number {
  const queue = [root];
  while (queue.length > 0) {
    const pid = queue.shift()!;
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    if (argv[1] === CLI && argv[2] === "view") return pid;
    const kids = readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
    if (kids) queue.push(...kids.split(/\s+/).map(Number));
  }
  throw new Error("viewer process not found");
}

describe("pi-workflows view in a terminal", () => {
  it("opens, moves, opens a run, replays, goes back, quits and restores the terminal", async () => {
    home = tempHome();
    seedViewerRuns(home.stateDir);
    const pty = openPty({ ...home.env, NO_COLOR: "1" }, "--all");
    let at = await pty.waitFor("pi-workflows runs");
    expect(pty.output()).toContain("\x1b[?1049h");
    await pty.waitFor("review-loop", at);
    await pty.waitFor("hello", at);
    // The newest run (review-loop) is selected; move down to hello and back up.
    pty.send("\x1b[B");
    at = await pty.waitFor("▶✓ completed ", at);
    pty.send("\x1b[A");
    at = await pty.waitFor("▶◐ running", at);
    // A filter typed after "/" narrows the list; Esc clears it.
    pty.send("/hel");
    at = await pty.waitFor("(1) · filter: hel_", at);
    pty.send("\r");
    at = await pty.waitFor('filter "hel"', at);
    pty.send("\x1b");
    at = await pty.waitFor("(2)", at);
    pty.send("\r");
    at = await pty.waitFor("Ship the parser", at);
    at = await pty.waitFor("· live", at);
    await pty.waitFor("implement", at);
    pty.send("\x1b[D");
    at = await pty.waitFor("replay 4/5", at);
    pty.send("\x1b[D\x1b[D");
    at = await pty.waitFor("replay 2/5", at);
    pty.send("\x1b[C\x1b[C\x1b[C\x1b[C");
    at = await pty.waitFor("· live", at);

    // A resize redraws everything at the new width.
    const tty = readlinkSync(`/proc/${viewerPid(pty.pid)}/fd/0`);
    execFileSync("stty", ["-F", tty, "cols", "60", "rows", "30"]);
    at = await pty.waitFor("\x1b[2J", at);
    at = await pty.waitFor("Ship the parser", at);

    pty.send("q");
    at = await pty.waitFor("pi-workflows runs", at);
    pty.send("q");
    await pty.waitFor("VIEW-EXIT=0", at);
    expect(await pty.exited).toBe(0);
    const out = pty.output();
    expect(out, visible(out)).toContain("TERMINAL-RESTORED");
    expect(out.lastIndexOf("\x1b[?1049l")).toBeGreaterThan(out.lastIndexOf("\x1b[?1049h"));
    expect(out.lastIndexOf("\x1b[?25h")).toBeGreaterThan(out.lastIndexOf("\x1b[?25l"));
  });

  it("restores the terminal when it gets SIGTERM", async () => {
    home = tempHome();
    const { review } = seedViewerRuns(home.stateDir);
    const pty = openPty({ ...home.env, NO_COLOR: "1" }, review);
    const at = await pty.waitFor("Ship the parser");
    process.kill(viewerPid(pty.pid), "SIGTERM");
    await pty.waitFor("VIEW-EXIT=143", at);
    const out = pty.output();
    expect(out, visible(out)).toContain("TERMINAL-RESTORED");
    expect(out.lastIndexOf("\x1b[?1049l")).toBeGreaterThan(out.lastIndexOf("\x1b[?1049h"));
  });
});
