/**
 * Errors a workflow author or operator sees. Each carries a stable `code` so the worker can
 * put it in a durable fact without parsing messages.
 */

/** A definition, graph, include or input problem found before any node runs. */
export class WorkflowDefinitionError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "WorkflowDefinitionError";
    this.code = code;
  }
}

/** A source file could not be found, read, parsed or loaded. `location` is `path:line` when known. */
export class WorkflowLoadError extends Error {
  readonly code: string;
  readonly location: string | null;
  constructor(code: string, message: string, location: string | null = null) {
    super(message);
    this.name = "WorkflowLoadError";
    this.code = code;
    this.location = location;
  }
}

/** Raised inside a node callback path; becomes a `failed` NodeResult with this code. */
export class NodeFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.name = "NodeFailure";
    this.code = code;
  }
}

/** One line, bounded, from anything thrown. */
export function errorMessage(error: unknown, max = 2000): string {
  let text: string;
  if (error instanceof Error) text = error.message || error.name;
  else if (typeof error === "string") text = error;
  else {
    try {
      text = JSON.stringify(error) ?? String(error);
    } catch {
      text = String(error);
    }
  }
  text = text.replace(/\s*\n\s*/g, " ").trim();
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
