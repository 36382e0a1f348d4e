/**
 * "Did you mean": the known name closest to a mistyped one, by edit distance (insertions,
 * deletions, substitutions and swaps of neighbours each count 1), when it is close enough to be
 * a typo: at most 2 edits, and at most a third of the typed name's length.
 */
export function closestName(typed: string, known: readonly string[]): string | null {
  const limit = Math.min(2, Math.max(1, Math.floor(typed.length / 3)));
  let best: string | null = null;
  let bestDistance = limit + 1;
  for (const name of known) {
    if (Math.abs(name.length - typed.length) > limit) continue;
    const d = editDistance(typed.toLowerCase(), name.toLowerCase());
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
    }
  }
  return best;
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a span). */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, rows[i - 2][j - 2] + 1);
      }
      rows[i][j] = d;
    }
  }
  return rows[a.length][b.length];
}
