/**
 * A character grid for drawing graphs. Lines are stored as arms (north, east, south, west,
 * each none, light or heavy) and turned into box-drawing characters only when the grid is
 * read, so a line that meets a border or another line becomes the right junction (`┬`, `┼`,
 * `┯`) whatever order they were drawn in. Text replaces a cell; `textIfFree` writes only into
 * empty cells, so a label can never damage a line.
 */
import { type Style, type StyledLine } from "./styled-line.ts";

export type Weight = 1 | 2;
export const N = 0;
export const E = 1;
export const S = 2;
export const W = 3;

interface Cell {
  /** Arm weights packed two bits per direction (N, E, S, W). */
  arms: number;
  text: string | null;
  style: Style;
}

const LIGHT = " ╵╶└╷│┌├╴┘─┴┐┤┬┼";
const HEAVY = " ╹╺┗╻┃┏┣╸┛━┻┓┫┳╋";
/** Mixed light/heavy junctions, keyed by the N E S W weights. */
const MIXED: Record<string, string> = {
  "0212": "┯",
  "1202": "┷",
  "1212": "┿",
  "2120": "┠",
  "2022": "┨",
  "2121": "╂",
};

export class Canvas {
  readonly width: number;
  readonly height: number;
  private readonly cells: Cell[];

  constructor(width: number, height: number) {
    this.width = width;
    this.height = height;
    this.cells = Array.from({ length: width * height }, () => ({
      arms: 0,
      text: null,
      style: "" as Style,
    }));
  }

  private cell(x: number, y: number): Cell | undefined {
    if (x < 0 || y < 0 || x >= this.width || y >= this.height) return undefined;
    return this.cells[y * this.width + x];
  }

  /** Adds arms to one cell. */
  arm(x: number, y: number, dirs: number[], weight: Weight, style: Style): void {
    const c = this.cell(x, y);
    if (!c) return;
    for (const d of dirs) {
      const shift = d * 2;
      const current = (c.arms >> shift) & 3;
      if (weight > current) c.arms = (c.arms & ~(3 << shift)) | (weight << shift);
    }
    c.text = null;
    c.style = style;
  }

  /** A horizontal line from x1 to x2 (either order) on row y. */
  hline(x1: number, x2: number, y: number, weight: Weight, style: Style): void {
    const [a, b] = x1 <= x2 ? [x1, x2] : [x2, x1];
    if (a === b) return;
    for (let x = a; x <= b; x++) {
      const dirs = x === a ? [E] : x === b ? [W] : [E, W];
      this.arm(x, y, dirs, weight, style);
    }
  }

  /** A vertical line from y1 to y2 (either order) in column x. */
  vline(x: number, y1: number, y2: number, weight: Weight, style: Style): void {
    const [a, b] = y1 <= y2 ? [y1, y2] : [y2, y1];
    if (a === b) return;
    for (let y = a; y <= b; y++) {
      const dirs = y === a ? [S] : y === b ? [N] : [N, S];
      this.arm(x, y, dirs, weight, style);
    }
  }

  /** A rectangle border; the interior is left alone. */
  box(x: number, y: number, w: number, h: number, weight: Weight, style: Style): void {
    this.hline(x, x + w - 1, y, weight, style);
    this.hline(x, x + w - 1, y + h - 1, weight, style);
    this.vline(x, y, y + h - 1, weight, style);
    this.vline(x + w - 1, y, y + h - 1, weight, style);
  }

  /** Writes text from (x, y), cut at the right edge. */
  text(x: number, y: number, text: string, style: Style = ""): void {
    let i = 0;
    for (const ch of text) {
      const c = this.cell(x + i++, y);
      if (!c) continue;
      c.arms = 0;
      c.text = ch;
      c.style = style;
    }
  }

  /** True when every cell of the span is inside the grid and empty. */
  isFree(x: number, y: number, width: number): boolean {
    for (let i = 0; i < width; i++) {
      const c = this.cell(x + i, y);
      if (!c || c.arms !== 0 || c.text !== null) return false;
    }
    return true;
  }

  /** Writes text only if every cell it needs is empty; returns whether it did. */
  textIfFree(x: number, y: number, text: string, style: Style = ""): boolean {
    const width = [...text].length;
    if (!this.isFree(x, y, width)) return false;
    this.text(x, y, text, style);
    return true;
  }

  /** The grid as styled lines, trailing blanks trimmed. */
  toLines(): StyledLine[] {
    const lines: StyledLine[] = [];
    for (let y = 0; y < this.height; y++) {
      const line: StyledLine = [];
      let end = this.width;
      while (end > 0 && this.glyph(this.cells[y * this.width + end - 1]) === " ") end--;
      for (let x = 0; x < end; x++) {
        const c = this.cells[y * this.width + x];
        const ch = this.glyph(c);
        const style = ch === " " ? "" : c.style;
        const last = line[line.length - 1];
        if (last && last.style === style) last.text += ch;
        else line.push({ text: ch, style });
      }
      lines.push(line);
    }
    return lines;
  }

  private glyph(c: Cell): string {
    if (c.text !== null) return c.text;
    if (c.arms === 0) return " ";
    const w = [N, E, S, W].map((d) => (c.arms >> (d * 2)) & 3);
    const mask = w.reduce((m, weight, d) => (weight ? m | (1 << d) : m), 0);
    const used = w.filter((x) => x > 0);
    if (used.every((x) => x === 1)) return LIGHT[mask];
    if (used.every((x) => x === 2)) return HEAVY[mask];
    return MIXED[w.join("")] ?? LIGHT[mask];
  }
}
