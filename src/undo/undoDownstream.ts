import {downstreamOf, type Downstream} from '../protocol/downstream.js'
import type {DownstreamFacts} from '../store/families/downstream.js'
import type {UndoQueueEffect} from '../store/families/undo.js'

/** What an undo changes downstream: the consumers as the scheduler sees them after it, and the readiness it takes. */
export interface UndoDownstream {
  /** The consumer DAGs of the events' assets as the scheduler sees them once the undo committed. */
  downstream: Downstream[]
  /** The consumer DAGs the events had made ready that are ready no longer. */
  lostReadiness: string[]
}

/**
 * The one decision of what an undo changes downstream, for the write, --dry-run and --plan alike:
 * the consumers' facts as read with the events still there, less the queue keys the undo takes
 * away and the aliases their queues then no longer reach (readUndoQueueEffect), evaluated as the
 * scheduler evaluates them (downstreamOf). The write reads both under its locks before deleting;
 * the plan reads them without a lock: the same rows, the same answer.
 */
export function undoDownstream(before: readonly DownstreamFacts[], effect: UndoQueueEffect): UndoDownstream {
  if (before.length === 0) return {downstream: [], lostReadiness: []}
  const goneAssets = new Map<string, Set<number>>()
  for (const row of effect.deleted)
    (goneAssets.get(row.dagId) ?? goneAssets.set(row.dagId, new Set()).get(row.dagId)!).add(row.assetId)
  const goneAliases = new Map<string, Set<string>>()
  for (const row of effect.lostAliases)
    (goneAliases.get(row.dagId) ?? goneAliases.set(row.dagId, new Set()).get(row.dagId)!).add(row.alias)
  const after = before.map((dag): DownstreamFacts => {
    const assets = goneAssets.get(dag.dagId)
    const aliases = goneAliases.get(dag.dagId)
    if (!assets && !aliases) return dag
    return {
      ...dag,
      queued: {
        // Every queued asset carries its id (the preview resolves ids to keys).
        assets: assets ? dag.queued.assets.filter((a) => a.id === undefined || !assets.has(a.id)) : dag.queued.assets,
        aliases: aliases ? dag.queued.aliases.filter((name) => !aliases.has(name)) : dag.queued.aliases,
      },
    }
  })
  const readyBefore = downstreamOf(before)
    .filter((d) => d.ready)
    .map((d) => d.dag_id)
  const downstream = downstreamOf(after)
  const readyAfter = new Set(downstream.filter((d) => d.ready).map((d) => d.dag_id))
  return {downstream, lostReadiness: readyBefore.filter((dag) => !readyAfter.has(dag))}
}
