/**
 * A failure's `{code, message}` as callbacks read it in `results.<id>.error` (and a controller in
 * a child workflow's `error`). pi-workflows 0.12 gave the message there as a plain string; this
 * object reads as that string too: it becomes the message wherever a string is made of it (a
 * template literal, `String(error)`, `+`, `==`), and has the string's `length` and its reading
 * methods (`includes`, `startsWith`, `slice`, `split`, ...), each applied to the message. So 0.12
 * code that formats or inspects the error runs unchanged. JSON, a spread and deep equality see
 * only `{code, message}`. Not a string: `typeof` is "object" and `===` compares identity.
 */

/** The string members a `ResultError` answers as its message would. */
const STRING_METHODS = [
  "at",
  "charAt",
  "endsWith",
  "includes",
  "indexOf",
  "lastIndexOf",
  "match",
  "padEnd",
  "padStart",
  "replace",
  "replaceAll",
  "search",
  "slice",
  "split",
  "startsWith",
  "substring",
  "toLowerCase",
  "toUpperCase",
  "trim",
  "trimEnd",
  "trimStart",
] as const;

export interface ResultError extends Pick<string, (typeof STRING_METHODS)[number] | "length"> {
  code: string;
  message: string;
  /** The message: what 0.12's `error` string held. */
  toString(): string;
}

/** Not enumerable: JSON, spreads and deep equality see a plain `{code, message}`. */
const STRING_LIKE: PropertyDescriptorMap = {
  toString: { value: messageOf },
  length: {
    get(this: { message: string }) {
      return this.message.length;
    },
  },
};
for (const name of STRING_METHODS) {
  const method = String.prototype[name] as (...args: unknown[]) => unknown;
  STRING_LIKE[name] = {
    value: function (this: { message: string }, ...args: unknown[]) {
      return method.apply(this.message, args);
    },
  };
}

export function resultError(error: { code: string; message: string }): ResultError {
  return Object.defineProperties(
    { code: error.code, message: error.message },
    STRING_LIKE,
  ) as ResultError;
}

function messageOf(this: { message: string }): string {
  return this.message;
}
