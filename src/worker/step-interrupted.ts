/**
 * The attempt cannot go on in this worker and has no outcome (its headless Pi was killed by a
 * signal): the worker ends its epoch without a boundary, so the host records the attempt
 * `interrupted`, as after a worker crash, and a new worker runs the step again (or the run blocks
 * when the node must not run twice); after repeated ones the host fails the run with `reason`.
 */
export class StepInterrupted extends Error {
  readonly reason: string;
  constructor(reason: string) {
    super(reason);
    this.reason = reason;
    this.name = "StepInterrupted";
  }
}
