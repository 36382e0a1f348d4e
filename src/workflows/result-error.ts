/**
 * A failure's `{code, message}` as callbacks read it in `results.<id>.error` (and a controller in
 * a child workflow's `error`). pi-workflows 0.12 gave the message there as a plain string; this
 * object becomes that string wherever a string is made of it (a template literal, `String(error)`,
 * `+`, `==`), so 0.12 code that formats or prints the error runs unchanged. JSON and a spread see
 * only `{code, message}`. String methods (`error.includes`) are not there: read `error.message`.
 */
export interface ResultError {
  code: string;
  message: string;
  /** The message: what 0.12's `error` string held. */
  toString(): string;
}

export function resultError(error: { code: string; message: string }): ResultError {
  const value = { code: error.code, message: error.message };
  // Not enumerable: JSON, spreads and deep equality see a plain `{code, message}`.
  Object.defineProperty(value, "toString", { value: messageOf });
  return value;
}

function messageOf(this: { message: string }): string {
  return this.message;
}
