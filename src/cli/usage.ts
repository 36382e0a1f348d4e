/**
 * Help texts of the CLI, printed by `--help` and `<command> --help`: the main help here, each
 * command's in the file of its group.
 */
import { CONTROLLER_HELP } from "./controller-usage.ts";
import { RUN_COMMANDS_HELP } from "./run-usage.ts";
import { SCHEDULE_HELP } from "./schedule-usage.ts";
import { TOOL_COMMANDS_HELP } from "./tool-usage.ts";
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
  ...RUN_COMMANDS_HELP,
  // The host keeps its place in the list (completion and --help order).
  host: TOOL_COMMANDS_HELP.host,
  controller: CONTROLLER_HELP,
  schedule: SCHEDULE_HELP,
  ...TOOL_COMMANDS_HELP,
};
