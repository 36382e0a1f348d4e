/**
 * Waits until what this process wrote to its stdout and stderr has left it. On a pipe Node
 * queues a write the pipe cannot take yet, so a node that prints a burst and returns at once
 * would otherwise report its outcome while most of the burst is still in the worker: the host
 * commits the result before it has read past the output cap. Once the queue has drained, the
 * host has read all but what the pipe and its stream buffer hold (about 128 KiB at most), so a
 * burst past the cap fails the attempt with the cap's error, as a slow writer's does.
 */
export function flushProcessOutput(): Promise<void> {
  return Promise.all([flushed(process.stdout), flushed(process.stderr)]).then(() => {});
}

function flushed(stream: NodeJS.WriteStream): Promise<void> {
  if (stream.writableLength === 0 || stream.destroyed || !stream.writable) {
    return Promise.resolve();
  }
  // An empty write's callback runs once every write queued before it has been handed on.
  return new Promise((resolve) => stream.write("", () => resolve()));
}
