/**
 * A small differential renderer on the terminal's alternate screen. Each frame is a list of
 * finished lines (one per row); only rows that differ from the previous frame are rewritten,
 * inside a synchronized-output block so the terminal shows whole frames. `stop` (also run on
 * SIGINT, SIGTERM, SIGHUP and process exit) leaves raw mode, shows the cursor and returns to
 * the main screen, so the terminal is always restored. Chosen over `@earendil-works/pi-tui` by
 * measurement: see docs/viewer.md.
 */
import { Buffer } from "node:buffer";
import { writeSync } from "node:fs";

export interface ScreenIo {
  output: NodeJS.WriteStream;
  input: NodeJS.ReadStream;
}

const ENTER = "\x1b[?1049h\x1b[?25l\x1b[2J";
const LEAVE = "\x1b[0m\x1b[?2026l\x1b[?25h\x1b[?1049l";
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

export class Screen {
  private previous: string[] = [];
  private active = false;
  private readonly onSignal = (signal: NodeJS.Signals) => {
    this.stop();
    process.exit(signal === "SIGINT" ? 130 : signal === "SIGTERM" ? 143 : 129);
  };
  private readonly onExit = () => this.stop();
  private detach: () => void = () => {};

  private readonly io: ScreenIo;

  constructor(io: ScreenIo) {
    this.io = io;
  }

  get width(): number {
    return Math.max(20, this.io.output.columns || 80);
  }

  get height(): number {
    return Math.max(5, this.io.output.rows || 24);
  }

  start(onKeys: (chunk: string) => void, onResize: () => void): void {
    this.active = true;
    for (const s of SIGNALS) process.on(s, this.onSignal);
    process.on("exit", this.onExit);
    if (this.io.input.isTTY) this.io.input.setRawMode(true);
    this.io.input.setEncoding("utf8");
    const resize = () => {
      this.previous = [];
      this.write("\x1b[2J");
      onResize();
    };
    this.io.input.on("data", onKeys);
    this.io.input.resume();
    this.io.output.on("resize", resize);
    this.detach = () => {
      this.io.input.off("data", onKeys);
      this.io.output.off("resize", resize);
    };
    this.write(ENTER);
  }

  /** Draws a frame of exactly `height` rows; returns the bytes written. */
  render(lines: readonly string[]): number {
    if (!this.active) return 0;
    let out = "";
    for (let row = 0; row < lines.length; row++) {
      if (lines[row] !== this.previous[row]) out += `\x1b[${row + 1};1H${lines[row]}\x1b[0m\x1b[K`;
    }
    for (let row = lines.length; row < this.previous.length; row++) {
      out += `\x1b[${row + 1};1H\x1b[K`;
    }
    this.previous = [...lines];
    if (out === "") return 0;
    const frame = `\x1b[?2026h${out}\x1b[?2026l`;
    this.write(frame);
    return Buffer.byteLength(frame);
  }

  stop(): void {
    if (!this.active) return;
    this.active = false;
    for (const s of SIGNALS) process.off(s, this.onSignal);
    process.off("exit", this.onExit);
    this.detach();
    try {
      if (this.io.input.isTTY) this.io.input.setRawMode(false);
    } catch {
      // The terminal may already be gone (SIGHUP).
    }
    this.io.input.pause();
    this.write(LEAVE);
  }

  private write(text: string): void {
    // Synchronous, so a frame or the restore sequence is never left half-written at exit.
    try {
      writeSync((this.io.output as unknown as { fd: number }).fd, text);
    } catch {
      // A closed terminal cannot be restored; nothing else to do.
    }
  }
}
