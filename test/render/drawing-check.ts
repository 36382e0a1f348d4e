/**
 * Structural checks on a drawn graph (plain text): every line arm meets a matching arm, an
 * arrow or a card border, and every `▼` has a line above it and a card below. A label that
 * overwrote part of an edge leaves a dangling arm, so it fails here.
 */
const LIGHT = " ╵╶└╷│┌├╴┘─┴┐┤┬┼";
const HEAVY = " ╹╺┗╻┃┏┣╸┛━┻┓┫┳╋";
const MIXED: Record<string, number> = { "┯": 14, "┷": 11, "┿": 15, "┠": 7, "┨": 13, "╂": 15 };
const N = 1, E = 2, S = 4, W = 8;

export function armsOf(ch: string): number {
  if (ch === " ") return 0;
  const l = LIGHT.indexOf(ch);
  if (l > 0) return l;
  const h = HEAVY.indexOf(ch);
  if (h > 0) return h;
  return MIXED[ch] ?? 0;
}

export function drawingProblems(lines: string[]): string[] {
  const grid = lines.map((l) => [...l]);
  const at = (x: number, y: number) => grid[y]?.[x] ?? " ";
  const problems: string[] = [];
  for (let y = 0; y < grid.length; y++) {
    for (let x = 0; x < grid[y].length; x++) {
      const ch = grid[y][x];
      if (ch === "▼") {
        if (!(armsOf(at(x, y - 1)) & S)) problems.push(`arrow at ${x},${y} has no line above`);
        if (!(armsOf(at(x, y + 1)) & E)) problems.push(`arrow at ${x},${y} points at no card`);
        continue;
      }
      const arms = armsOf(ch);
      if (arms & N && !(armsOf(at(x, y - 1)) & S)) problems.push(`dangling ↑ at ${x},${y} '${ch}'`);
      if (arms & S && !(armsOf(at(x, y + 1)) & N) && at(x, y + 1) !== "▼") {
        problems.push(`dangling ↓ at ${x},${y} '${ch}'`);
      }
      if (arms & E && !(armsOf(at(x + 1, y)) & W)) problems.push(`dangling → at ${x},${y} '${ch}'`);
      if (arms & W && !(armsOf(at(x - 1, y)) & E)) problems.push(`dangling ← at ${x},${y} '${ch}'`);
    }
  }
  return problems;
}
