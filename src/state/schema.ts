/**
 * The schema text and its identity. `schema.sql` is the specification of every durable fact;
 * its digest (whitespace and comments normalized) is stored in `meta` and checked on open.
 */
import { readFileSync } from "node:fs";
import { sha256Hex } from "../protocol/canonical-json.ts";

export const STATE_IDENTITY = "pi-workflows-state";
export const SCHEMA_VERSION = 1;

let cachedDdl: string | undefined;

/** The DDL text of schema.sql. */
export function schemaDdl(): string {
  cachedDdl ??= readFileSync(new URL("./schema.sql", import.meta.url), "utf8");
  return cachedDdl;
}

/** DDL without comments, with every whitespace run collapsed to one space. */
export function canonicalDdl(ddl: string): string {
  return ddl
    .split("\n")
    .map((line) => line.replace(/--.*$/, ""))
    .join(" ")
    .replace(/\s+/g, " ")
    .replace(/\s*([(),;])\s*/g, "$1")
    .trim();
}

/** `sha256:<hex>` of the canonical DDL. */
export function ddlDigest(ddl = schemaDdl()): string {
  return `sha256:${sha256Hex(canonicalDdl(ddl))}`;
}

/** How much of the digest people see in reports. */
export const DDL_DIGEST_PREFIX_LENGTH = 19;
