/** Help texts of the run commands: starting, following, steering and fixing one run. */
export const RUN_COMMANDS_HELP: Record<string, string> = {
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
};
