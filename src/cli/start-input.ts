/**
 * What `start` sends besides the workflow: the input (from the command line, a file or stdin)
 * and the run environment (the allowlisted base of this process's environment plus `--env`).
 * Reading happens here, not in the parser, which never touches files or streams.
 */
import { readFileSync } from "node:fs";
import type { Readable } from "node:stream";
import type { JsonValue } from "../protocol/canonical-json.ts";
import { MAX_FRAME_BYTES } from "../protocol/framing.ts";
import { isCredentialName } from "../base/credential-names.ts";
import { type RunEnvironment, runEnvironment } from "../protocol/run-environment.ts";
import { UsageError } from "./exit-codes.ts";
import { type EnvOption, type InputSource, parseInputJson } from "./parse-start.ts";

/** An input must fit the request message with room for the rest of it. */
const MAX_INPUT_BYTES = MAX_FRAME_BYTES - 64 * 1024;

export async function readStartInput(
  source: InputSource,
  stdin: Readable = process.stdin,
): Promise<JsonValue> {
  switch (source.kind) {
    case "value":
      return source.value;
    case "file":
      return parseInputJson(readInputFile(source.path), "--input-file");
    case "stdin":
      return parseInputJson(await readBounded(stdin), "input on stdin");
  }
}

function readInputFile(path: string): string {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    throw new UsageError(
      `Cannot read --input-file (${typeof code === "string" ? code : "error"}): ${path}`,
    );
  }
  if (bytes.length > MAX_INPUT_BYTES) {
    throw new UsageError(`Input too large: --input-file holds more than ${MAX_INPUT_BYTES} bytes`);
  }
  return bytes.toString("utf8");
}

async function readBounded(stream: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of stream) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : (chunk as Buffer);
    length += bytes.length;
    if (length > MAX_INPUT_BYTES) {
      stream.destroy();
      throw new UsageError(`Input too large: stdin holds more than ${MAX_INPUT_BYTES} bytes`);
    }
    chunks.push(bytes);
  }
  return Buffer.concat(chunks, length).toString("utf8");
}

/** The run environment `start` sends: this environment's base plus every `--env`. */
export function startEnvironment(
  options: readonly EnvOption[],
  env: NodeJS.ProcessEnv,
): RunEnvironment {
  const explicit: RunEnvironment = {};
  for (const { name, value } of options) {
    const resolved = value ?? env[name];
    if (resolved === undefined) {
      throw new UsageError(`Cannot pass --env ${name}: it is not set in this environment`);
    }
    explicit[name] = resolved;
  }
  return runEnvironment(env, explicit);
}

/**
 * One line for `start` (or `schedule add|apply`, naming the schedule) saying where the secrets
 * the user named with `--env` go; null when none was named. (Other variables are recorded with
 * the run or schedule; a secret never is.)
 */
export function namedSecretsLine(
  options: readonly EnvOption[],
  schedule: string | null = null,
): string | null {
  const names = [...new Set(options.map((o) => o.name).filter(isCredentialName))];
  if (names.length === 0) return null;
  const kept = `--env ${names.join(", ")}: kept in the host's memory only (never stored), for `;
  if (schedule === null) {
    return `${kept}this run's workers, its shell and action nodes and Pi; after a host restart, ` +
      "resume the run from a shell that has them";
  }
  return `${kept}the workers, shell and action nodes and Pi of every run this schedule starts; ` +
    "after a host restart its runs are blocked credentialsMissing (nothing runs without them) " +
    `until 'pi-workflows schedule resume ${schedule}' from a shell that has them (and ` +
    "'pi-workflows resume <run>' for a run already blocked)";
}
