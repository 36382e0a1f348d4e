/**
 * A read-only object view over a lookup, built in constant time. Node callbacks read
 * `outputs.x`, spread it, enumerate it or `JSON.stringify` it as a plain object; writes throw.
 */
export function readonlyRecord<T>(
  name: string,
  keys: () => string[],
  get: (key: string) => T | undefined,
): Record<string, T> {
  const refuse = (): never => {
    throw new TypeError(`Context ${name} are read-only`);
  };
  return new Proxy(Object.create(null) as Record<string, T>, {
    get: (_t, key) => (typeof key === "string" ? get(key) : undefined),
    has: (_t, key) => typeof key === "string" && get(key) !== undefined,
    ownKeys: () => keys(),
    getOwnPropertyDescriptor: (_t, key) => {
      if (typeof key !== "string") return undefined;
      const value = get(key);
      if (value === undefined) return undefined;
      return { value, enumerable: true, configurable: true, writable: false };
    },
    set: refuse,
    deleteProperty: refuse,
    defineProperty: refuse,
    setPrototypeOf: refuse,
  });
}
