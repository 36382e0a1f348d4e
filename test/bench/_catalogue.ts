/**
 * Every benchmark: one line on what it measures, and the top-level fields of the JSON line it
 * prints (its header comment says what each means). `npm run bench` lists this; the smoke run
 * (`npm run bench -- --smoke`, run by CI) checks every bench against it, so a bench that stops
 * running or stops printing a field it documents fails CI, and a new bench must be added here.
 */
export interface BenchEntry {
  what: string;
  fields: readonly string[];
  /** Needs the compiled executable (`npm run compile`). */
  needsBinary?: boolean;
}

export const BENCHES: Readonly<Record<string, BenchEntry>> = {
  controllers: {
    what: "controller applies and reconciles per second through a real controller worker",
    fields: [
      "resources",
      "applies_per_s",
      "reconciles_per_s",
      "commits_per_reconcile",
      "statements_per_reconcile",
      "host_cpu_ms_per_reconcile",
      "allocated_kb_per_reconcile",
      "young_generation_mb",
      "scavenges",
      "mark_compacts",
      "gc_ms_per_reconcile",
      "raw_tx_per_s",
      "raw_after_tx_per_s",
      "ratio",
      "first_reconcile_ms",
    ],
  },
  handoff: {
    what: "host side of an interactive step handoff, with a socket client standing in for Pi",
    fields: ["steps", "bare_node_ms", "source", "bundle", "bundle_fresh", "speedup"],
  },
  headless: {
    what: "a headless agent step beside a bare Pi: one-step start/finish, and steps 2-10 of a run",
    fields: [
      "runs",
      "start_median_ms",
      "finish_median_ms",
      "bare_start_median_ms",
      "bare_tool_median_ms",
      "host_share_ms",
      "ratio",
      "step_median_ms",
      "bare_warm_median_ms",
      "step_ratio",
      "first_step_median_ms",
      "bare_pi_start_median_ms",
      "first_step_ratio",
      "commits_per_step",
    ],
  },
  "host-memory": {
    what: "resident memory of a real host under bursts of concurrent starts",
    fields: [
      "starts",
      "rounds",
      "node_e_rss_mib",
      "host_start_rss_mib",
      "host_peak_rss_mib",
      "host_settled_rss_mib",
    ],
  },
  "idle-deadlines": {
    what: "CPU and wake-ups of an idle host with many runs waiting at a timed decision",
    fields: [
      "waiting_runs",
      "window_ms",
      "cpu_ms_per_s",
      "wakeups_per_s",
      "cpu_ms_per_s_added_by_waiting",
    ],
  },
  interaction: {
    what: "interactive steps in the real Pi: start-to-prompt and submit-to-next-prompt",
    fields: [
      "steps",
      "bare_prompt_round_trip_ms",
      "start_to_prompt_ms",
      "submit_to_next_prompt_ms",
      "bare_tool_turnaround_ms",
      "ratio_submit_to_next_beyond_pi",
      "bare_prompt_round_trip_after_run_ms",
      "bare_prompt_to_request_after_run_ms",
      "bare_tool_turnaround_after_run_ms",
      "ratio_submit_to_next_beyond_pi_after_run",
      "context_kb",
      "step_context_bytes",
      "step_context_messages",
      "host_handoff_ms",
      "handoff_commits",
      "host_submit_to_request_ms",
      "host_submit_to_answer_ms",
      "submit_to_host_read_ms",
      "answer_to_next_prompt_ms",
      "pi_cpu_per_step_ms",
      "ratio_host_handoff",
    ],
  },
  load: {
    what: "a host working through many queued runs while clients poll status and list",
    fields: [
      "runs",
      "completed_runs_per_s",
      "status_p50_ms",
      "status_p99_ms",
      "client_status_p99_ms",
      "loop_delay_p99_ms",
      "disk_commit_p50_ms",
      "host_peak_rss_mb",
      "lost",
      "duplicated",
    ],
  },
  nodes: {
    what: "compute nodes per second through the real supervision and worker, against raw commits",
    fields: [
      "nodes",
      "nodes_per_s",
      "raw_tx_per_s",
      "ratio",
      "first_node_ms",
      "commits_per_node",
      "cold_ratio",
      "warmup",
      "nodes_per_s_10k",
      "ratio_10k",
      "cost_ratio",
      "commits_per_node_10k",
      "host_cpu_us_per_node_10k",
      "worker_cpu_us_per_node_10k",
    ],
  },
  "protected-write": {
    what: "claim-checked lifecycle writes per second against bare commits, alone and grouped",
    fields: [
      "raw_tx_per_s",
      "protected_tx_per_s",
      "ratio",
      "grouped_ratio",
      "raw_frames_per_tx",
      "protected_frames_per_tx",
      "receipt_frames_per_tx",
    ],
  },
  retention: {
    what:
      "a prune of 100,000 ended runs: lock hold, file size, reads before/after beside 50 active runs",
    fields: [
      "endedRuns",
      "fileBytes",
      "bytesPerEndedRun",
      "bytesPerNodeAttempt",
      "prune",
      "doctor",
      "largeRuns",
      "ms",
      "ratioToSmall",
    ],
  },
  socket: {
    what: "run.status round trips on the host socket against a raw unix socket echo",
    fields: [
      "placement",
      "echo_p50_us",
      "status_p50_us",
      "status_p99_us",
      "status_rps",
      "ratio_p50",
    ],
  },
  spawn: {
    what: "launchable run to worker.ready, from source, bundle and binary, against node -e 0",
    fields: ["runs", "bare_node_median_ms", "ready_median_ms", "ratio", "bundled_ratio", "binary"],
  },
  startup: {
    what: "start-up of the compiled executable (--version, --help) against node -e 0",
    fields: ["runs", "node_median_ms", "binary_median_ms", "binary_help_median_ms", "ratio"],
    needsBinary: true,
  },
  takeover: {
    what: "kill -9 of the host mid-node: time to a new host serving and the run moving again",
    fields: ["kills", "node_e0_ms", "source", "bundled", "target_ms"],
  },
  viewer: {
    what: "the viewer's refresh loop on a large state database while a writer stays busy",
    fields: ["runs", "dbMegabytes", "repeats", "p99TickMs", "p99TickCpuMs", "peakRssMb", "gates"],
  },
  "process-backend": {
    what: "the ps process backend against /proc: a table read, a supervision tick, loop stalls",
    fields: [
      "workers",
      "processes",
      "call_ms",
      "call_ratio",
      "tick_ms",
      "tick_ratio",
      "loop_stall_ms",
      "spawn_identify_ms",
      "load1",
    ],
  },
  "viewer-db": {
    what: "builds the viewer bench's synthetic state database and prints its counts and size",
    fields: ["runs", "attempts", "updates", "viewerDeltas", "bytes", "megabytes"],
  },
  "viewer-terminal": {
    what: "Pi's TUI renderer against the viewer's own screen: bundle size, import, frame bytes",
    fields: ["piTui", "own"],
  },
};
