/**
 * SIGINT / SIGTERM during a batch: the first asks workers to take no new item (in-flight
 * transactions commit or roll back on their own, then the summary is printed, exit 130); a second
 * signal exits at once, and the server rolls back whatever was still open.
 */
export function watchInterrupts(onFirst: (signal: string) => void): {requested: () => boolean; dispose: () => void} {
  let requested = false
  const handler = (signal: NodeJS.Signals) => {
    if (requested) process.exit(130)
    requested = true
    onFirst(signal)
  }

  process.on('SIGINT', handler)
  process.on('SIGTERM', handler)
  return {
    requested: () => requested,
    dispose() {
      process.off('SIGINT', handler)
      process.off('SIGTERM', handler)
    },
  }
}
