/**
 * The encoded answer to a plain `run.status` (no payload fields) per run, reused until the next
 * commit: the host is the only writer, so an unchanged commit count (`commitCount`) means the
 * answer is unchanged. Only the request id differs between two such answers; the cached frame is
 * split around it, so a hit costs no query and no encoding. Bounded; emptied on every commit.
 */
import type { HostResponse } from "../protocol/host-response.ts";
import { type StateStore } from "../state/store.ts";
import { commitCount } from "../state/transactions.ts";
import { fastCanonicalJson } from "../protocol/fast-canonical-json.ts";
import { encodeResponseFrame, withEncodedFrame } from "./response-frame.ts";

const MAX_RUNS = 256;
/** Stands in for the request id while the answer is encoded (printable ASCII, no escapes). */
const PLACEHOLDER = "piw-status-cache-request-id-0f5e2c";
const QUOTED = `"${PLACEHOLDER}"`;

interface Entry {
  response: HostResponse;
  before: Buffer;
  after: Buffer;
}

interface Cache {
  commit: number;
  runs: Map<string, Entry>;
}

const caches = new WeakMap<StateStore, Cache>();

function cacheOf(store: StateStore): Cache {
  const commit = commitCount(store);
  let cache = caches.get(store);
  if (cache === undefined || cache.commit !== commit) {
    cache = { commit, runs: new Map() };
    caches.set(store, cache);
  }
  return cache;
}

/** The cached answer for `runId` with `requestId`, or undefined on a miss. */
export function cachedStatus(
  store: StateStore,
  runId: string,
  requestId: string,
): HostResponse | undefined {
  const entry = cacheOf(store).runs.get(runId);
  if (entry === undefined) return undefined;
  const response = { ...entry.response, requestId } as HostResponse;
  const id = Buffer.from(fastCanonicalJson(requestId), "utf8");
  return withEncodedFrame(response, Buffer.concat([entry.before, id, entry.after]));
}

/** Remembers `response` (a fresh plain answer for `runId`) and returns it, encoded. */
export function rememberStatus(
  store: StateStore,
  runId: string,
  response: HostResponse,
): HostResponse {
  const cache = cacheOf(store);
  let frame: Buffer;
  try {
    frame = encodeResponseFrame({ ...response, requestId: PLACEHOLDER });
  } catch {
    return response; // too large for a frame: the socket server answers that as usual
  }
  const at = frame.indexOf(QUOTED);
  if (at < 0 || frame.indexOf(QUOTED, at + 1) >= 0) return response;
  if (cache.runs.size >= MAX_RUNS) cache.runs.clear();
  const entry = {
    response,
    before: frame.subarray(0, at),
    after: frame.subarray(at + QUOTED.length),
  };
  cache.runs.set(runId, entry);
  return cachedStatus(store, runId, response.requestId as string) ?? response;
}
