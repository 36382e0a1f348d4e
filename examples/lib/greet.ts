/** A helper module: workflow files can import relative files like any TypeScript module. */
export function greeting(name: string): string {
  return `Hello, ${name}!`;
}

export function normalizeName(raw: unknown): string {
  const obj = typeof raw === "object" && raw !== null
    ? raw as { name?: unknown; task?: unknown }
    : null;
  const name = obj ? obj.name ?? obj.task : raw;
  if (name === undefined || name === null || name === "") return "world";
  if (typeof name !== "string" || name.length > 100) {
    throw new Error('input.name must be a string of at most 100 characters, e.g. {"name": "Ada"}');
  }
  return name.trim();
}
