/**
 * The committed `schemas/` are exactly what the valibot schemas generate, every file compiles
 * under a standard draft 2020-12 validator, and `pi-workflows schema` prints the same bytes.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { describe, expect, it } from "vitest";
import { protocolJsonSchemas, schemaFileText } from "../../src/protocol/json-schemas.ts";
import { runCliProcess } from "../support/host.ts";

const SCHEMA_DIR = join(dirname(fileURLToPath(import.meta.url)), "../../schemas");

describe("published JSON Schemas", () => {
  const generated = protocolJsonSchemas();

  it("the committed files are what the schemas generate (run `npm run schemas` after a change)", () => {
    expect(readdirSync(SCHEMA_DIR).sort()).toEqual(Object.keys(generated).sort());
    for (const [file, schema] of Object.entries(generated)) {
      expect(readFileSync(join(SCHEMA_DIR, file), "utf8"), file).toBe(schemaFileText(schema));
    }
  });

  it("every file is a valid draft 2020-12 schema and compiles in strict mode", () => {
    const ajv = addFormats.default(new Ajv2020.default({ strict: true, strictRequired: false }));
    for (const [file, schema] of Object.entries(generated)) {
      expect((schema as { $schema: string }).$schema).toBe(
        "https://json-schema.org/draft/2020-12/schema",
      );
      ajv.addSchema(schema, file);
      expect(() => ajv.getSchema(file), file).not.toThrow();
    }
  });

  it("states the cross-field rules: a success carries a receipt, a failure an error", () => {
    const ajv = addFormats.default(new Ajv2020.default({ strict: true, strictRequired: false }));
    const validate = ajv.compile(generated["host-response.v1.json"]);
    const base = {
      schema: "pi-workflows.host-response.v1",
      requestId: "r1",
      hostEpoch: 1,
    };
    expect(validate({ ...base, outcome: "accepted", receipt: {} })).toBe(true);
    expect(validate({ ...base, outcome: "accepted" })).toBe(false);
    expect(validate({ ...base, outcome: "rejected", receipt: {} })).toBe(false);
    expect(validate({ ...base, outcome: "rejected", error: { code: "x", message: "y" } }))
      .toBe(true);
  });

  it("`pi-workflows schema` prints and writes the same schemas, and names the choices", async () => {
    const one = await runCliProcess(["schema", "worker-reply"], process.env);
    expect(one.code).toBe(0);
    expect(`${one.stdout.trimEnd()}\n`).toBe(schemaFileText(generated["worker-reply.v1.json"]));
    const all = await runCliProcess(["schema"], process.env);
    expect(JSON.parse(all.stdout)).toEqual(JSON.parse(JSON.stringify(generated)));

    const out = mkdtempSync(join(tmpdir(), "piw-schemas-"));
    try {
      const written = await runCliProcess(["schema", "--out", out], process.env);
      expect(written.code).toBe(0);
      for (const file of Object.keys(generated)) {
        expect(readFileSync(join(out, file), "utf8")).toBe(
          readFileSync(join(SCHEMA_DIR, file), "utf8"),
        );
      }
    } finally {
      rmSync(out, { recursive: true, force: true });
    }

    const unknown = await runCliProcess(["schema", "nope"], process.env);
    expect([unknown.code, unknown.stderr.trim()]).toEqual([
      2,
      "Unknown schema 'nope': use one of host-request, host-response, worker-launch, worker-message, worker-reply, resolve-request, resolve-result, resolve-progress, validate-request, controller-launch, controller-push, controller-message, controller-resolve-request, controller-resolve-result",
    ]);
    const extra = await runCliProcess(["schema", "a", "b"], process.env);
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain("Unexpected argument 'b' for 'schema'");
  });
});
