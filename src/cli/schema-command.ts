/**
 * `pi-workflows schema [name] [--out DIR]`: the protocol's JSON Schemas from the executable itself,
 * so a client author needs nothing but the program they already run.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { protocolJsonSchemas, schemaFileText } from "../protocol/json-schemas.ts";
import { EXIT, UsageError } from "./exit-codes.ts";
import type { CliIo } from "./output.ts";
import type { CliCommand } from "./parse-command.ts";

export function runSchemaCommand(
  command: Extract<CliCommand, { kind: "schema" }>,
  io: CliIo,
): number {
  const schemas = protocolJsonSchemas();
  const files = command.name === null ? Object.keys(schemas) : [fileFor(command.name, schemas)];
  if (command.out !== null) {
    const dir = resolve(command.out);
    mkdirSync(dir, { recursive: true });
    for (const file of files) {
      writeFileSync(join(dir, file), schemaFileText(schemas[file]));
      io.out(join(dir, file));
    }
  } else if (command.name !== null) {
    io.out(schemaFileText(schemas[files[0]]).trimEnd());
  } else {
    io.out(JSON.stringify(schemas, null, 2));
  }
  return EXIT.ok;
}

/** `host-request`, `host-request.v1` and `host-request.v1.json` all name one file. */
function fileFor(name: string, schemas: Record<string, unknown>): string {
  const file = [name, `${name}.json`, `${name}.v1.json`].find((f) => f in schemas);
  if (file !== undefined) return file;
  const names = Object.keys(schemas).map((f) => f.replace(/\.v1\.json$/, "")).join(", ");
  throw new UsageError(`Unknown schema '${name.slice(0, 100)}': use one of ${names}`);
}
