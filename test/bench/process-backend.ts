/**
 * `npm run bench -- process-backend [workers] [repeats]`: what the `ps` process backend costs
 * against the `/proc` one, on this machine, in one run. `workers` detached `sleep` groups stand
 * in for a host's workers (default 8).
 *
 * - `call_ms`: one fresh table read (what each signal, liveness or tree decision waits for),
 *   median and p95, per backend; `call_ratio` = ps / proc medians.
 * - `tick_ms`: one supervision tick's memory sample of every worker (one shared table read plus
 *   a lookup per worker), per backend; `tick_ratio` likewise.
 * - `loop_stall_ms`: the longest the event loop was held during the `ps` reads (a 1 ms timer's
 *   worst lateness): the reads are asynchronous, so it stays near the timer's own jitter.
 * - `spawn_identify_ms`: the one synchronous read left, `ps -p` of a just-spawned child (a
 *   worker's Pi spawn, `identifyChildNow`), median; under `/proc` a stat file read.
 * - `processes`: rows in the table (what `ps -A` prints); `load1`: the one-minute load average.
 */
import { spawn } from "node:child_process";
import { loadavg } from "node:os";
import { procTable } from "../../src/os/proc-table.ts";
import { createPsTableSource, readPsTableNow } from "../../src/os/ps-table.ts";
import type { ProcessIdentity, ProcessTable } from "../../src/os/process-table.ts";
import { benchArgs, bySize, round, stats } from "./_figures.ts";

const workers = Number(benchArgs[0] ?? bySize(8, 2));
const repeats = Number(benchArgs[1] ?? bySize(40, 3));
if (
  !Number.isSafeInteger(workers) || workers < 1 || !Number.isSafeInteger(repeats) || repeats < 1
) {
  console.error("Usage: npm run bench -- process-backend [workers >= 1] [repeats >= 1]");
  process.exit(2);
}

const children = Array.from(
  { length: workers },
  () => spawn("sleep", ["300"], { detached: true, stdio: "ignore" }),
);
try {
  const identities: ProcessIdentity[] = children.map((c) => ({
    pid: c.pid!,
    startTime: procTable.stat(c.pid!)?.startTime ?? "0",
  }));
  const ps = createPsTableSource({ shareMs: 0 });
  const readers: Record<"proc" | "ps", () => Promise<ProcessTable>> = {
    proc: () => Promise.resolve(procTable),
    ps: () => ps.table({ fresh: true }),
  };

  let stall = 0;
  const timed = async (read: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let i = 0; i < repeats; i++) {
      let last = performance.now();
      const timer = setInterval(() => {
        const now = performance.now();
        stall = Math.max(stall, now - last - 1);
        last = now;
      }, 1);
      const start = performance.now();
      await read();
      samples.push(performance.now() - start);
      clearInterval(timer);
    }
    return samples;
  };

  const call = {
    proc: stats(await timed(async () => (await readers.proc()).stat(identities[0].pid))),
    ps: { median: 0, p95: 0 },
  };
  stall = 0;
  call.ps = stats(await timed(async () => (await readers.ps()).stat(identities[0].pid)));
  const psStall = stall;
  const sample = (table: ProcessTable) => identities.map((id) => table.residentBytes(id.pid));
  const tick = {
    proc: stats(await timed(async () => sample(await readers.proc()))),
    ps: stats(await timed(async () => sample(await readers.ps()))),
  };
  const identify = {
    proc: stats(await timed(() => Promise.resolve(procTable.stat(identities[0].pid)))).median,
    ps: stats(await timed(() => Promise.resolve(readPsTableNow(identities[0].pid)))).median,
  };
  const table = await readers.ps();
  console.log(JSON.stringify({
    bench: "process-backend",
    workers,
    repeats,
    processes: [...table.all()].length,
    call_ms: call,
    call_ratio: round(call.ps.median / Math.max(call.proc.median, 0.001)),
    tick_ms: tick,
    tick_ratio: round(tick.ps.median / Math.max(tick.proc.median, 0.001)),
    loop_stall_ms: round(psStall),
    spawn_identify_ms: identify,
    load1: round(loadavg()[0]),
  }));
} finally {
  for (const child of children) {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // already gone
    }
  }
}
