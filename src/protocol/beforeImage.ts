import type {ConsumerDecision} from '../store/airflowStore.js'

/**
 * The queue rows a write created, by target DAG: the keys its queue statement inserted (a key
 * queued already is not listed; it was not this write's to take back). From 3.4 each row names
 * its event and goes with it; before, airlock undo deletes only the rows listed here.
 */
export function queueRowsCreated(consumers: readonly ConsumerDecision[]): Record<string, number[]> {
  const byDag = new Map<string, Set<number>>()
  for (const c of consumers) {
    if (c.kind !== 'queued') continue
    byDag.set(c.dagId, (byDag.get(c.dagId) ?? new Set()).add(c.assetId))
  }
  return Object.fromEntries(
    [...byDag].sort(([a], [b]) => (a < b ? -1 : 1)).map(([dag, ids]) => [dag, [...ids].sort((x, y) => x - y)]),
  )
}
