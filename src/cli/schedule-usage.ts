/** `pi-workflows schedule --help`: the schedule commands. */
export const SCHEDULE_HELP = `Usage: pi-workflows schedule <action> [arguments] [options]

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
  pi-workflows schedule show audit`;
