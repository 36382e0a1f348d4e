/**
 * The files `npm test` runs in a shared process (vitest project `shared`, `isolate: false`): one
 * process per worker runs them one after another, instead of a fresh process per file. A fresh
 * process costs about 0.6 CPU s a file (vitest's runtime and the file's imports, again): these
 * 89 files took 83.5 CPU s isolated and 31.4 shared side by side (load 17-21), 23.2 shared in a
 * shuffled order. A plain `vitest run <file>` runs every file isolated.
 *
 * Only in-process tests that leave the process as they found it belong here: none starts a
 * host, CLI, worker or Pi (shell.test.ts runs short shell commands through runShell, which
 * leave nothing behind), loads a workflow or controller file (the authoring API on
 * globalThis and Node's module hooks are the process's, set once by the first loader: a
 * controller loaded before a workflow gave the workflow the controller's API), runs the CLI in
 * the process, or leaves fake timers or listeners behind. file-order.test.ts checks each listed
 * file's own imports (not what they import in turn: a new file's imports need a reader's look).
 */
export const SHARED_FILES = [
  "test/base/{credential-names,schedule-timing,version}.test.ts",
  "test/cli/{answer-input,cli-style,format-waiting,parse-command,parse-controller}.test.ts",
  "test/cli/rerun-text.test.ts",
  "test/client/host-client.test.ts",
  "test/controllers/{session-binding-state,state}.test.ts",
  "test/extension/{branch-index,command-args,controller-args,decision-text}.test.ts",
  "test/extension/{extension-events,handoff-quiet,host-launch,pi-api-types,progress-view}.test.ts",
  "test/extension/{run-watch,status-text,submit-window,tool-input}.test.ts",
  "test/host/{accept-source,deadline-timer,host-options,idle-check,resolved-run}.test.ts",
  "test/host/{response-frame,run-logs,socket-close,socket-path,status-cache}.test.ts",
  "test/host/supervision/supervision-options.test.ts",
  "test/host/worker-messages/facts-stream.test.ts",
  "test/protocol/{answer-schema,controller-frames,failures,fast-canonical-json}.test.ts",
  "test/protocol/{follow-stream,framing-fuzz,framing,host-request-fast,host-request}.test.ts",
  "test/protocol/{host-response,resolve-messages,run-facts-decoded,worker-message-fast}.test.ts",
  "test/protocol/worker-messages.test.ts",
  "test/render/{answer-text,schedule-text}.test.ts",
  "test/state/{claim-property,claim-token-cache,claims,commands,decisions,doctor}.test.ts",
  "test/state/{effect-resolve,effects,group-commit,interactions,outbox,recovery,run-fork}.test.ts",
  "test/state/{run-revision,run-spend,run-status-query,transitions,values,write-pragmas}.test.ts",
  "test/viewer/{bounded-reads,render-screens}.test.ts",
  "test/worker/{budget-check,fresh-instances,own-facts}.test.ts",
  "test/workflows/{agent-group,agent-output,builders,compile,engine-interactive,engine}.test.ts",
  "test/workflows/{error-compare-012,managed-effect,routing,shell,step-contract,updates}.test.ts",
];
