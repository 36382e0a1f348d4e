/**
 * Rendered output: each line is a list of segments with a style token. Tokens name a meaning
 * (`active`, `ok`, `muted`), never a colour, so the terminal viewer maps them to ANSI codes and
 * the Pi widget to its theme; `plainText` drops them (NO_COLOR, tests, snapshots).
 */
export type Style =
  | ""
  | "title"
  | "muted"
  | "label"
  | "edge"
  | "taken"
  | "active"
  | "selected"
  | "running"
  | "waiting"
  | "ok"
  | "failed"
  | "warn"
  | "heading";

export interface Segment {
  text: string;
  style: Style;
}

export type StyledLine = Segment[];

export function plainText(line: StyledLine): string {
  return line.map((s) => s.text).join("");
}

export function plainLines(lines: readonly StyledLine[]): string[] {
  return lines.map(plainText);
}

/** One-segment line. */
export function line(text: string, style: Style = ""): StyledLine {
  return text === "" ? [] : [{ text, style }];
}

/** Display width of a string, counting every code point as one column. */
export function textWidth(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Cuts `text` to `width` columns, ending with `…` when it had to cut. */
export function truncate(text: string, width: number): string {
  if (width <= 0) return "";
  const chars = [...text];
  if (chars.length <= width) return text;
  return chars.slice(0, width - 1).join("") + "…";
}

/** Cuts a styled line to `width` columns. */
export function clipLine(line: StyledLine, width: number): StyledLine {
  const out: StyledLine = [];
  let left = width;
  for (const seg of line) {
    if (left <= 0) break;
    const w = textWidth(seg.text);
    if (w <= left) {
      out.push(seg);
      left -= w;
    } else {
      out.push({ text: [...seg.text].slice(0, left).join(""), style: seg.style });
      left = 0;
    }
  }
  return out;
}

/** Joins segments, merging neighbours of the same style. */
export function concat(...parts: (StyledLine | Segment)[]): StyledLine {
  const out: StyledLine = [];
  for (const part of parts) {
    for (const seg of Array.isArray(part) ? part : [part]) {
      if (seg.text === "") continue;
      const last = out[out.length - 1];
      if (last && last.style === seg.style) last.text += seg.text;
      else out.push({ ...seg });
    }
  }
  return out;
}
