/** Exit codes of `pi-workflows worker`. The host reads them only as diagnostics. */
export const WORKER_EXIT = {
  done: 0,
  failed: 1,
  usage: 2,
  claimLost: 3,
  channelClosed: 4,
} as const;
