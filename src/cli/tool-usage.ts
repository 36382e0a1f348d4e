/**
 * Help texts of the commands around the runs: the host, the workflow list, prune, the test kit,
 * doctor, the schemas, the worker entry and shell completion.
 */
export const TOOL_COMMANDS_HELP: Record<string, string> = {
  host: `Usage: pi-workflows host <run|start|status|stop> [--json]

  run      Run the host attached to this terminal (logs to stderr)
  start    Start the host in the background and wait until it answers
  status   Show host state, epoch, socket, workers and run counts
  stop     Ask the host to stop gracefully

Environment: PI_WORKFLOWS_STATE_DIR (state directory), PI_WORKFLOWS_HOST_IDLE_MS (idle exit,
default 300000).

Examples:
  pi-workflows host status
  pi-workflows host stop`,
  workflows: `Usage: pi-workflows workflows [--json] [--cwd DIR]

Lists the workflows \`start\` can run by name in the project (default: this directory): files
in .pi/workflows/ (project), in \${PI_CODING_AGENT_DIR:-~/.pi/agent}/workflows/ (user), then the
built-ins. A name found earlier overrides a later one; \`builtin:<id>\` always names a built-in.
Loads no workflow code and needs no host.

Options:
  --cwd DIR   The project directory
  --json      {"workflows": [{name, source, detail, ref, overrides}]}

Example:
  pi-workflows workflows --json`,
  prune: `Usage: pi-workflows prune [--keep-days N] [--dry-run] [--json]

Asks the host to delete ended runs older than the retention period, with everything they own,
and give the space back to the file; prints what went (runs, rows per table, bytes). Runs that a
controller or another run still references, and runs with a client command younger than an
hour, are kept. The host also does this by itself while idle (docs/state.md, "Retention").

Options:
  --keep-days N  Keep ended runs this many days (default: retention.days in the state
                 directory's config.json, else 30; 0: every ended run is due)
  --dry-run      Count what would go, change nothing
  --json         The host's receipt: {runs, rows, bytes, fileBytesBefore, fileBytesAfter, ...}

Example:
  pi-workflows prune --keep-days 7 --dry-run`,
  test: `Usage: pi-workflows test [files or directories...]

Runs workflow tests written with the test kit (@osolmaz/pi-workflows/testing, docs/testing.md):
every *.workflow.test.ts file in the given files and directories (default: this directory,
without node_modules, dist and dot directories), one after another, with no test runner
installed. Each test runs its workflows on a real host in a temp directory, never the user's.
Prints one line per test, then "N passed, N failed"; exits 1 when a test failed or none was
found.

Example:
  pi-workflows test examples/`,
  doctor: `Usage: pi-workflows doctor [--json]

Opens the state database read-only and checks its identity and invariants.

Example:
  pi-workflows doctor --json`,
  schema: `Usage: pi-workflows schema [name] [--out DIR]

Prints the JSON Schemas (draft 2020-12) of the local protocol, generated from the schemas the
host validates with: host requests and responses (with every operation's payload and receipt),
worker messages, replies and the launch envelope. See docs/protocol.md, "Write a client".

  (no name)    one JSON object: {"<file name>": <schema>, ...}
  <name>       one schema, e.g. host-request (or host-request.v1.json)
  --out DIR    write every schema to DIR/<file name> and print the paths

Example:
  pi-workflows schema host-request > host-request.v1.json`,
  worker: `Usage: pi-workflows worker

Internal: a run worker started by the host. Do not run it by hand.

Example (what the host runs; it fails when started by hand):
  pi-workflows worker`,
  completion: `Usage: pi-workflows completion <bash|zsh>

Prints a completion script for the shell: commands, options, workflow names (the project's
.pi/workflows/, your agent directory's workflows/ and the built-ins) and, while a host runs,
run ids. Completing never starts a host.

Examples:
  pi-workflows completion bash > ~/.local/share/bash-completion/completions/pi-workflows
  pi-workflows completion zsh > "\${fpath[1]}/_pi-workflows"   (then start a new zsh)
  source <(pi-workflows completion bash)                      this shell only`,
};
