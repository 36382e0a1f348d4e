/**
 * How fast a Pi session may send tool updates of one interactive request: a token bucket per
 * request (20/s, burst 100), like worker updates, bounded to the 1,000 latest requests.
 */
import { UPDATE_LIMITS } from "../workflows/updates.ts";
import type { HostRuntime } from "./host-runtime.ts";

/** Per-request token buckets of tool updates (20/s, burst 100), like worker updates. */
const buckets = new WeakMap<HostRuntime, Map<string, { tokens: number; at: number }>>();

export function takeToken(rt: HostRuntime, interactionId: string): boolean {
  let perHost = buckets.get(rt);
  if (!perHost) buckets.set(rt, perHost = new Map());
  const now = rt.clock.now();
  const bucket = perHost.get(interactionId) ?? { tokens: UPDATE_LIMITS.burst, at: now };
  bucket.tokens = Math.min(
    UPDATE_LIMITS.burst,
    bucket.tokens + ((now - bucket.at) / 1000) * UPDATE_LIMITS.ratePerSecond,
  );
  bucket.at = now;
  if (bucket.tokens < 1) return false;
  bucket.tokens -= 1;
  perHost.delete(interactionId);
  perHost.set(interactionId, bucket);
  // Bounded: the oldest buckets (insertion order) go first.
  if (perHost.size > 1000) perHost.delete(perHost.keys().next().value!);
  return true;
}
