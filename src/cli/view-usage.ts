/** `pi-workflows view --help` (usage.ts holds the other commands' help). */
export const VIEW_HELP = `Usage: pi-workflows view [runId] [--once] [--all] [--filter TEXT]

Opens a live full-screen view of the runs (or of one run): the runs list, and for a run its
graph, step timeline and the selected step's details. Reads the state database read-only, with
or without a running host. Keys: ↑/↓ select or scroll, enter open, ←/→ replay steps (past the
last step follows live), a active/all, / filter (enter keeps it, Esc clears it), q back or quit.

Options:
  --once           Print one plain-text snapshot and exit (also when stdout is not a terminal)
  --all            List finished runs too
  --filter TEXT    List only runs whose id, workflow, title or state contains TEXT

Examples:
  pi-workflows view                          the live runs list
  pi-workflows view 1a2b --once              one snapshot of run run-1a2b... (any unique id prefix)
  pi-workflows view --all --filter deploy    every run of the deploy workflow`;
