import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'

export interface QueueOrphan {
  kind: 'queue_missing_asset' | 'queue_missing_dag' | 'queue_missing_event' | 'alias_link_missing_event'
  detail: string
}

/**
 * Rows pointing at something that no longer exists: queue rows whose asset, DAG (or, from 3.4,
 * event) is gone, and alias links to missing events. The foreign keys cascade, so these appear
 * only where a restore or a manual fix bypassed them; NOT EXISTS finds them either way.
 */
export async function readQueueOrphans(db: Knex, capabilities: Pick<Capabilities, 'queueShape'>, limit = 1000): Promise<QueueOrphan[]> {
  const perEvent = capabilities.queueShape === 'per_event'
  const {rows} = await db.raw<{rows: QueueOrphan[]}>(
    `(select 'queue_missing_asset' as kind, format('asset_dag_run_queue (asset_id %s, target_dag_id %s)', q.asset_id, q.target_dag_id) as detail
        from asset_dag_run_queue q where not exists (select 1 from asset a where a.id = q.asset_id) limit ?)
     union all
     (select 'queue_missing_dag', format('asset_dag_run_queue (asset_id %s, target_dag_id %s)', q.asset_id, q.target_dag_id)
        from asset_dag_run_queue q where not exists (select 1 from dag d where d.dag_id = q.target_dag_id) limit ?)
     ${perEvent ? `union all
     (select 'queue_missing_event', format('asset_dag_run_queue (target_dag_id %s, asset_event_id %s)', q.target_dag_id, q.asset_event_id)
        from asset_dag_run_queue q where not exists (select 1 from asset_event e where e.id = q.asset_event_id) limit ?)` : ''}
     union all
     (select 'alias_link_missing_event', format('asset_alias_asset_event (alias_id %s, event_id %s)', l.alias_id, l.event_id)
        from asset_alias_asset_event l where not exists (select 1 from asset_event e where e.id = l.event_id) limit ?)`,
    perEvent ? [limit, limit, limit, limit] : [limit, limit, limit],
  )
  return rows
}
