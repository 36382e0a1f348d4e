/**
 * `npm run bench -- viewer-terminal`: the measurement behind the viewer's terminal layer choice
 * (docs/viewer.md). For Pi's `@earendil-works/pi-tui` alternate-screen renderer and the viewer's
 * own `Screen`: bundled size (esbuild, minified, as the single executable would carry it) and
 * whether a native `.node` file enters the bundle, cold import time of that bundle (median of
 * 5 processes), and bytes written for a 50-row frame, then for a frame that changes one row.
 * pi-tui is a devDependency through Pi itself; it is not a dependency of the viewer.
 */
import { Buffer } from "node:buffer";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PassThrough } from "node:stream";
import * as esbuild from "esbuild";
import { Screen } from "../../src/viewer/screen.ts";

const root = new URL("../../", import.meta.url).pathname;
const dir = mkdtempSync(join(tmpdir(), "piw-term-bench-"));

async function bundle(
  name: string,
  contents: string,
): Promise<{ bytes: number; native: boolean; file: string }> {
  const file = join(dir, `${name}.mjs`);
  const result = await esbuild.build({
    stdin: { contents, resolveDir: root, loader: "ts" },
    bundle: true,
    platform: "node",
    format: "esm",
    minify: true,
    outfile: file,
    metafile: true,
    logLevel: "silent",
  });
  const native = Object.keys(result.metafile.inputs).some((p) => p.endsWith(".node"));
  return { bytes: statSync(file).size, native, file };
}

function importMs(file: string): number {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const out = execFileSync(process.execPath, [
      "--input-type=module",
      "-e",
      `const t = performance.now(); await import(${
        JSON.stringify(file)
      }); console.log(performance.now() - t);`,
    ], { encoding: "utf8" });
    times.push(Number(out.trim()));
  }
  times.sort((a, b) => a - b);
  return Math.round(times[2] * 10) / 10;
}

const rows = (changed: number) =>
  Array.from(
    { length: 50 },
    (_, i) => `row ${i} ${i === changed ? "changed" : "steady"} ${"·".repeat(60)}`,
  );

async function piTuiFrames(): Promise<{ first: number; oneRow: number }> {
  const tui = await import("@earendil-works/pi-tui");
  const writes: string[] = [];
  const terminal = {
    start() {},
    stop() {},
    drainInput: async () => {},
    write: (d: string) => void writes.push(d),
    columns: 120,
    rows: 50,
    kittyProtocolActive: false,
    moveBy() {},
    hideCursor() {},
    showCursor() {},
    clearLine() {},
    clearFromCursor() {},
    clearScreen() {},
    setTitle() {},
    setProgress() {},
  };
  let current = rows(-1);
  const app = new tui.TuiAltScreen(terminal as never);
  app.addChild({ render: () => current, invalidate() {} } as never);
  const settle = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 20));
  };
  app.start();
  await settle();
  const first = Buffer.byteLength(writes.join(""));
  writes.length = 0;
  current = rows(7);
  app.requestRender();
  await settle();
  const oneRow = Buffer.byteLength(writes.join(""));
  app.stop();
  return { first, oneRow };
}

function ownFrames(): { first: number; oneRow: number } {
  const out = new PassThrough() as unknown as NodeJS.WriteStream;
  const bytes: number[] = [];
  const screen = new Screen({
    output: out,
    input: new PassThrough() as unknown as NodeJS.ReadStream,
  });
  // Frames only: measure what render() writes, without a terminal to switch into raw mode.
  (screen as unknown as { active: boolean }).active = true;
  bytes.push(screen.render(rows(-1)));
  bytes.push(screen.render(rows(7)));
  return { first: bytes[0], oneRow: bytes[1] };
}

try {
  const pi = await bundle(
    "pi-tui",
    `export { TuiAltScreen, ProcessTerminal } from "@earendil-works/pi-tui";`,
  );
  const own = await bundle("own", `export { Screen } from "./src/viewer/screen.ts";`);
  const piFrames = await piTuiFrames();
  const ownFrame = ownFrames();
  console.log(JSON.stringify({
    bench: "viewer-terminal",
    piTui: {
      bundleBytes: pi.bytes,
      nativeInBundle: pi.native,
      importMs: importMs(pi.file),
      frameBytes: piFrames,
    },
    own: {
      bundleBytes: own.bytes,
      nativeInBundle: own.native,
      importMs: importMs(own.file),
      frameBytes: ownFrame,
    },
  }));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
