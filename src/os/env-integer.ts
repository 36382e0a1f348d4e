/**
 * Whole-number settings read from the environment (host, supervision and client tunables), with
 * one actionable line for a bad value.
 */
import * as v from "valibot";

const PositiveInteger = v.pipe(
  v.string(),
  v.regex(/^\d+$/, "expected a whole number"),
  v.transform(Number),
  v.number(),
  v.integer(),
  v.minValue(1, "expected at least 1"),
  v.maxValue(2 ** 31 - 1, "expected at most 2147483647"),
);

/**
 * A whole number from 1 to 2^31-1 in environment variable `name`; undefined when it is unset or
 * empty. A bad value is a one-line `RangeError` naming the variable. Shared by every tunable read
 * from the environment (host and supervision options).
 */
export function readPositiveIntegerEnv(
  env: Record<string, string | undefined>,
  name: string,
): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const parsed = v.safeParse(PositiveInteger, raw.trim());
  if (!parsed.success) {
    throw new RangeError(
      `Invalid ${name}: ${parsed.issues[0].message}, got ${JSON.stringify(raw.slice(0, 40))}`,
    );
  }
  return parsed.output;
}

/**
 * `defaults` with each key whose environment variable (`names[key]`) is set replaced by its value,
 * read as `readPositiveIntegerEnv` does.
 */
export function readPositiveIntegerOptions<K extends string>(
  env: Record<string, string | undefined>,
  names: Readonly<Record<K, string>>,
  defaults: Readonly<Record<K, number>>,
): Record<K, number> {
  const options = { ...defaults } as Record<K, number>;
  for (const key of Object.keys(names) as K[]) {
    options[key] = readPositiveIntegerEnv(env, names[key]) ?? options[key];
  }
  return options;
}
