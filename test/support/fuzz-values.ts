/**
 * Seeded JSON values for the tests that hold a fast parse to its reference schema: any value,
 * nested a little, and one random change to a valid one. Keys never `__proto__`, `prototype`
 * or `constructor` (valibot's record drops them; the fast parses keep them: the documented
 * difference).
 */
export type Rand = () => number;

export const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];

/** Any JSON value, nested a little, its object keys drawn from `keys`. */
export function jsonValue(r: Rand, keys: readonly string[], depth = 0): unknown {
  const k = Math.floor(r() * (depth > 2 ? 4 : 6));
  if (k === 0) return null;
  if (k === 1) return r() < 0.5;
  if (k === 2) return pick(r, [0, -1, 1.5, 2 ** 53, 1e300]);
  if (k === 3) return pick(r, ["", "a", "é😀", "x".repeat(300)]);
  if (k === 4) {
    return Array.from({ length: Math.floor(r() * 3) }, () => jsonValue(r, keys, depth + 1));
  }
  const o: Record<string, unknown> = {};
  for (let i = Math.floor(r() * 3); i > 0; i--) o[pick(r, keys)] = jsonValue(r, keys, depth);
  return o;
}

/**
 * One random change somewhere in `value`: a key dropped, a key from `added` set, a value replaced
 * by a leaf from `leaves` (at a leaf) or by any JSON value.
 */
export function mutateValue(
  r: Rand,
  value: unknown,
  pools: { leaves: readonly unknown[]; added: readonly string[]; keys: readonly string[] },
): unknown {
  if (typeof value !== "object" || value === null) return pick(r, pools.leaves);
  const copy: Record<string, unknown> | unknown[] = Array.isArray(value)
    ? [...value]
    : { ...value as Record<string, unknown> };
  const keys = Object.keys(copy);
  const action = Math.floor(r() * 4);
  if (action === 0 && keys.length > 0) {
    delete (copy as Record<string, unknown>)[pick(r, keys)];
  } else if (action === 1) {
    (copy as Record<string, unknown>)[pick(r, pools.added)] = jsonValue(r, pools.keys);
  } else if (keys.length > 0) {
    const key = pick(r, keys);
    const inner = (copy as Record<string, unknown>)[key];
    (copy as Record<string, unknown>)[key] = action === 2
      ? mutateValue(r, inner, pools)
      : jsonValue(r, pools.keys);
  }
  return copy;
}

/** A value as a receiver sees it: through JSON text and JSON.parse. */
export const asReceived = (value: unknown): unknown => JSON.parse(JSON.stringify(value) ?? "null");
