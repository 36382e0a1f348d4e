/** `pi-workflows controller --help`: the controller resource commands. */
export const CONTROLLER_HELP = `Usage: pi-workflows controller <action> [arguments] [options]

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
  pi-workflows controller reconcile file-sync notes --wait`;
