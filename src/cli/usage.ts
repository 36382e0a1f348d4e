/** Help texts of the CLI, one per command, printed by `--help` and `<command> --help`. */
import { VIEW_HELP } from "./view-usage.ts";

export const MAIN_HELP = `pi-workflows: durable workflows for the Pi coding agent

Usage:
  pi-workflows <command> [options]

Commands:
  workflows                    List what can be started (project, user, built-in)
  start <workflow> [text...]   Start a run (text becomes the input {"task": "..."})
  status <runId> [--wait]      Show one run, or follow it
  logs <runId> [node] [-f]     What a run's steps printed (--follow: as they print it)
  list                         List active runs (--all: every run; --limit N)
  pause <runId>                Pause a run at its last durable boundary
  resume <runId>               Resume a paused or blocked run (it brings this shell's keys)
  rerun <runId> [--from node]  Fork a run at a node: earlier steps adopted, not run again
  retry <runId>                Rerun a failed run from its failed node on the file as it is now
  effect resolve <runId> <id>  Record what an ambiguous effect did, then resume the run
  cancel <runId>               Cancel a run
  budget <runId> --raise USD   Raise a run's budget (one blocked at it then goes on)
  answer <runId> [node] <a>    Answer the checkpoint or human decision a run waits at
  controller list|get|apply|reconcile|delete|unbind
                               Manage controller resources (docs/controllers.md)
  schedule add|apply|list|show|pause|resume|remove
                               Start a workflow on a cron or an interval (docs/schedules.md)
  host run|start|status|stop   Manage the workflow host process
  view [runId]                 Watch runs live in the terminal (read-only)
  test [files...]              Run *.workflow.test.ts files with the test kit
  doctor                       Check the state database (read-only)
  prune [--keep-days N]        Delete ended runs past the retention period (--dry-run)
  schema [name] [--out DIR]    Print or write the protocol's JSON Schemas
  completion bash|zsh          Print a shell completion script

Options:
  --help       Show help (also: pi-workflows <command> --help)
  --version    Print the version, commit and build date (--version --json for scripts)

Examples:
  pi-workflows start echo hi --wait      run the built-in echo workflow and follow it
  pi-workflows list                      what runs, waits or is stuck, and what moves it on
  pi-workflows status 1a2b               one run (any unique prefix of its id)
  source <(pi-workflows completion bash) tab completion for this shell

Exit codes: 0 ok, 1 failure, 2 usage error, 3 refused by the host, 4 host unavailable,
5 doctor found problems, 6 run did not succeed, 7 run needs attention, 8 no usable Pi,
141 output pipe closed (see docs/cli.md).`;

export const COMMAND_HELP: Record<string, string> = {
  view: VIEW_HELP,
  start: `Usage: pi-workflows start <workflow> [text...] [options]

Starts a run of <workflow> (a name, builtin:<id>, or a path to a .workflow.ts file).
Words after the workflow become the input {"task": "<text>"}; with no text the input is {}.
The host is started on demand. Agent and decision steps run headless with your Pi
(PI_WORKFLOWS_PI, the pi entry of config.json in the state directory, or pi on PATH).

The run executes in its project directory with a small base of this environment (PATH, HOME,
USER, SHELL, LANG, LC_*, TERM, TMPDIR and the like) plus the variables passed with --env.
A secret-looking --env name (*_TOKEN, *_API_KEY, ...) is never stored: the host holds it in
memory for the run's workers, shell and action nodes and Pi.

Options:
  --input-json JSON   Use this JSON value as the input instead of text ('-': read it from stdin)
  --input-file PATH   Read the JSON input from a file (keeps it out of 'ps')
  --env NAME[=VALUE]  Pass a variable to the run (repeatable; without a value: from here)
  --cwd DIR           Project directory the run belongs to (default: the current directory)
  --wait              Follow the run's progress until it ends or waits, then print the result
  --json              Print machine-readable JSON
  --provider P        Pi provider for the run's model steps (needs --model)
  --model M           Pi model for the run's model steps
  --thinking T        Thinking level: off, minimal, low, medium, high, xhigh, max
  --project-context   Let the run's Pi load context files (AGENTS.md, CLAUDE.md) and skills
                      (default: none; each headless run is one Pi session, see 'status')
  --max-cost USD      Budget: no model step starts once the run spent this much (in the
                      models' price currency, US dollars for Pi's tables)
  --max-tokens N      Budget: no model step starts once the run used N tokens (200k, 1.5M)
                      (either wins over the workflow's own budget when smaller)
  -- <pi args>        Further Pi arguments, recorded with the run (no --api-key)

Examples:
  pi-workflows start echo hello there --wait      the built-in echo workflow
  pi-workflows start examples/hello.workflow.ts --input-json '{"name": "Ada"}' --wait
  pi-workflows start deploy --input-file input.json --env GITHUB_TOKEN --cwd ~/src/app
                                                  .pi/workflows/deploy.workflow.ts of ~/src/app
  pi-workflows start review --model claude-sonnet-4 --thinking low --wait
                                                  model steps in a headless Pi`,
  status: `Usage: pi-workflows status <runId> [--attempts N|all] [--wait] [--json]

Shows the state, revision, nodes and result of one run: the last 20 node attempts, or the last N
(--attempts N, up to 1000), or every one (--attempts all). A waiting run also shows what it asks:
the decision's title, presentation, choices, deadline and default, and how to answer it.

--wait follows the run instead, as 'start --wait' does (from its first event, then live), until
it ends or needs someone; the exit code says which. Use it after an answer or a resume, or to
watch a run another terminal started.

A run id may be any unique prefix of it (1a2b, run-1a2b), as in git.

Examples:
  pi-workflows status 1a2b
  pi-workflows status run-1a2b3c4d --attempts all --json
  pi-workflows status 1a2b --wait              follow it until it ends or waits`,
  logs: `Usage: pi-workflows logs <runId> [<node>] [--follow] [--attempts N] [--json]

Prints what the run's steps printed, step by step (the last 20 attempts, or N with --attempts,
up to 50), or only <node>'s: the stdout and stderr of a shell node's command and of an action's
or compute's code, the conversation of an agent step in a headless Pi (its prompt, the model's
replies and tool calls, what each tool returned), and each step's latest updates. Each stream
shows its last 16 KiB; a step keeps the newest 512 KiB of each stream on disk. Tokens and keys
the run was given are replaced by [redacted] before the output is written. A model step of an
interactive run ran in your Pi session: its conversation is there.

--follow (-f) keeps printing as the steps print, until the run ends (Ctrl-C to stop earlier).
--json prints the host's answer (with --follow: one JSON line per new piece).

Examples:
  pi-workflows logs 1a2b                  what every step printed
  pi-workflows logs 1a2b build --follow   stream the build step as it runs`,
  list: `Usage: pi-workflows list [--all] [--limit N] [--json]

Lists active runs (queued, running, waiting, paused, blocked), newest first: the newest 50, or N
with --limit N. --all lists every run, finished ones included (all of them unless --limit is
given). Each shows its state in words (waiting for whom, blocked, paused) and, under a run that
needs someone, the command that moves it on. When more runs exist than are shown, the last line
says how many.

Examples:
  pi-workflows list
  pi-workflows list --all --limit 10 --json`,
  budget: `Usage: pi-workflows budget <runId> [--raise USD] [--raise-tokens N] [--json]

Raises a run's budget by the amounts given. A model step does not start once the run's spend
reaches its budget: the run is then blocked budgetExceeded, waiting for a person, and 'status'
shows what it spent. Raising the budget above the spend lets it go on at once; 'cancel' ends it.
A run whose worker is running now is refused: raise it when it stops (or pause it first).

Options:
  --raise USD         Add this much to the cost limit (2.50, $2.50)
  --raise-tokens N    Add this many tokens to the token limit (50000, 50k, 1.5M)
  --json              Print machine-readable JSON

Example:
  pi-workflows budget 1a2b --raise 2.50`,
  pause: `Usage: pi-workflows pause <runId> [--json]

Pauses a run: its worker stops and it resumes later from its last durable boundary.

Example:
  pi-workflows pause 1a2b`,
  resume: `Usage: pi-workflows resume <runId> [--accept-source] [--json]

Resumes a paused run, or a run blocked after its workflow source changed (once restored).
A run blocked on an ambiguous effect is refused: use 'pi-workflows effect resolve'.
A headless run blocked credentialsMissing (the host restarted and forgot its provider keys)
takes them again from this shell's environment.

Options:
  --accept-source   A run blocked workflowSourceChanged goes on with the file as it is now,
                    when every node it ran still exists with the same kind and edges (the
                    re-pin is recorded in its events); otherwise fork it: 'pi-workflows rerun'

Examples:
  pi-workflows resume 1a2b
  pi-workflows resume 1a2b --accept-source`,
  rerun: `Usage: pi-workflows rerun <runId> [--from <node>] [--visit N] [options] [-- <pi args>]

Starts a new run forked from <runId>: the steps before <node> are adopted from it (their
outputs and effects count as done and are not run again) and the run goes on from <node>.
The parent is left as it is. See docs/when-a-run-fails.md.

Options:
  --from <node>        The node to rerun (mount/child inside an included workflow); default
                       where the run stopped (its failed node, or where it is parked)
  --visit N            Which visit of <node> in a loop (1 = first); default the latest
  --source current     Run on the workflow file as it is now (default when it changed): the
                       adopted steps must still fit it (same nodes, kinds and edges)
  --source recorded    Run on the source the run recorded (refused when the file changed)
  --input-json <json|-> | --input-file <path>
                       A new input (default the run's own)
  --env NAME[=value]   Pass a variable to the new run (as for start)
  --provider, --model, --thinking, -- <pi args>
                       New model arguments for a headless run (default the run's own)
  --wait               Follow the new run until it ends or needs someone
  --json               Print the receipt as JSON

An interactive run is rerun from its Pi session: /workflow rerun <runId> [node].

Examples:
  pi-workflows rerun 1a2b                      rerun the node it failed in
  pi-workflows rerun 1a2b --from review --wait
  pi-workflows rerun 1a2b --from fix --visit 2`,
  retry: `Usage: pi-workflows retry <runId> [--env NAME[=value]] [--wait] [--json]

A failed or timed-out run whose failure was in one node is run again from that node on the
workflow file as it is now: the same as 'rerun <runId> --from <failed node> --source current',
and printed as such. The failed run stays failed; the retry is a new run.

Example:
  pi-workflows retry 1a2b --wait`,
  effect: `Usage: pi-workflows effect resolve <runId> <attemptId|effectId> <verdict> [options]

An action or shell node was interrupted and may have applied its effect without a receipt, so
the run is blocked and a plain resume is refused. Check the external system, then record what
happened ('pi-workflows status <runId>' names the attempt and effect). The verdict, who gave it
and when are kept in the run's event log; the run then resumes.

Verdicts (exactly one):
  --applied JSON   It applied: JSON becomes the node's output and the run routes on
  --not-applied    It did not apply: the node runs again
  --retry          Unknown: run the node again anyway (it may apply twice)

Options:
  --operator NAME  Who decided (default: your login name)
  --json           Print machine-readable JSON

Example:
  pi-workflows effect resolve 1a2b att-7 --not-applied`,
  cancel: `Usage: pi-workflows cancel <runId> [--json]

Cancels a run. An effect that may have applied becomes ambiguous for manual review.

Example:
  pi-workflows cancel 1a2b`,
  answer: `Usage: pi-workflows answer <runId> [<nodeId>] <json|text> [--json]
       pi-workflows answer <runId> [<nodeId>] --choice <name> [--input <name>=<text>] [--json]

Answers what a waiting run asks (see 'pi-workflows status <runId>'). <nodeId> defaults to the
node the run waits at. The run then continues, same run id, from the answered node.

  checkpoint       JSON as typed ('{"approved": true}'); any other text becomes {"answer": "<text>"}
  human decision   a choice name or label (approve, "Approve the release"), or --choice <name>;
                   a choice that needs text takes --input <name>=<text>

Refused (exit 3): a second or stale answer, the wrong node, an answer after the deadline (its
default or timeout is recorded instead), or one that does not fit what the node declared.

Examples:
  pi-workflows answer 1a2b '{"approved": true}'
  pi-workflows answer 1a2b approve
  pi-workflows answer 1a2b approval --choice reject --input reason="flaky tests"`,
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
  controller: `Usage: pi-workflows controller <action> [arguments] [options]

  list [<controller>]                 The project's controllers and resources
  get <controller> <key>              One resource: spec, status, queue, effects, child runs
  apply <controller> <key>            Create or update a resource (the controller is a name in
                                      .pi/controllers/ or ~/.pi/agent/controllers/, or a path)
  reconcile <controller> <key>        Reconcile a resource now
  delete <controller> <key>           Delete a resource (its controller clears its finalizers)
  unbind <controller>                 Revoke the Pi session approved for the controller's
                                      interactive child runs (approve one in that session with
                                      /controller bind <controller>)

Options:
  --spec-json JSON     apply: the resource spec (default null)
  --spec-file FILE     apply: read the spec from a JSON file
  --digest SHA256      apply: refuse unless the controller source has exactly this digest
  --provider P, --model M, --thinking T
                       apply: the Pi model for the child runs' agent steps (the Pi found
                       here is recorded with the controller)
  --effect ID --applied JSON | --not-applied
                       reconcile: first record your reviewed verdict on the resource's ambiguous
                       effect ID (it applied: JSON is its receipt; it did not: apply it again)
  --expect-version N   apply, reconcile, delete: only if the resource is at this version
                       (apply: 0 means it must not exist yet)
  --wait               apply, reconcile: wait until the resource settles; delete: until it is gone
  --timeout SECONDS    how long --wait waits (default 60)
  --cwd DIR            the project directory (default: the current directory)
  --json               print machine-readable JSON

Examples:
  pi-workflows controller list
  pi-workflows controller get file-sync notes
  pi-workflows controller reconcile file-sync notes --wait`,
  schedule: `Usage: pi-workflows schedule <action> [arguments] [options]

Schedules start headless runs of a workflow at the slots of a cron expression or at a fixed
interval, while a host runs (an enabled schedule keeps it running; a host started after a gap
catches up by the schedule's policy). See docs/schedules.md.

Actions:
  add <name> <workflow>        Add a schedule (--cron or --every)
  apply <file>                 Add or update the schedule a workflow file declares (\`schedule\`
                               in defineWorkflow); reading a file never schedules it
  list                         Every schedule, with its next slot
  show <name>                  One schedule and its latest firings (--firings N, default 10)
  pause <name>                 Stop firing (runs already started go on)
  resume <name>                Fire again from the next slot (brings this shell's provider keys)
  remove <name>                Delete the schedule (its runs are kept)

Options of add:
  --cron "M H DoM Mon DoW"     5 fields: minute hour day-of-month month day-of-week, with
                               ranges (1-5), steps (*/15), lists (1,3) and names (MON, JAN)
  --tz ZONE                    IANA zone of the cron's wall time (default: this machine's)
  --every DURATION             an interval such as 30s, 15m, 1h30m or 2d (at least 1s)
  --overlap skip|queue|cancel-previous
                               while the previous run is active: start nothing (default),
                               start after it, or cancel it and start
  --catch-up none|latest|all-bounded
                               slots missed while no host ran: none (default), one run, or
                               one per slot (at most 10)
  --input-json JSON | --input-file FILE
                               the input of every run (default null)
  --env NAME[=value]           pass a variable to its runs (repeatable)
  --replace                    replace a schedule of the same name
  --provider P --model M --thinking L, -- <pi args>
                               how its runs' agent steps start Pi (add, apply)
  --cwd DIR                    the project directory (default: the current directory)
  --json                       print machine-readable JSON

Examples:
  pi-workflows schedule add audit deps-audit --cron "0 9 * * 1-5" --tz Europe/Berlin
  pi-workflows schedule add pr-queue check-prs --every 30m --overlap queue
  pi-workflows schedule apply .pi/workflows/monitor.workflow.ts
  pi-workflows schedule show audit`,
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
