import type {Knex} from 'knex'

import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import type {EventFilter} from './classifyEventsForKeys.js'

/**
 * One keyset page of distinct source task instance keys among the filtered events, ordered by the
 * key: the unit audit-events pages over (every group of a key is classified together).
 */
export async function readEventSourceKeys(db: Knex, after: TaskInstanceKey | null, limit: number, filter: EventFilter & {sourceDagId?: string | undefined}): Promise<TaskInstanceKey[]> {
  // source_map_index is nullable (default -1): NULL is read as -1 everywhere, in the key, the
  // order and the keyset comparison, so paging neither repeats nor skips those events.
  const query = db('asset_event as e')
    .distinct('e.source_dag_id', 'e.source_run_id', 'e.source_task_id', db.raw('coalesce(e.source_map_index, -1) as source_map_index'))
    .whereNotNull('e.source_dag_id')
    .whereNotNull('e.source_run_id')
    .whereNotNull('e.source_task_id')
    .orderBy(['e.source_dag_id', 'e.source_run_id', 'e.source_task_id', {column: db.raw('coalesce(e.source_map_index, -1)') as unknown as string}])
    .limit(limit)
  if (after) query.whereRaw('(e.source_dag_id, e.source_run_id, e.source_task_id, coalesce(e.source_map_index, -1)) > (?, ?, ?, ?)', [after.dagId, after.runId, after.taskId, after.mapIndex])
  if (filter.sourceDagId) query.where('e.source_dag_id', filter.sourceDagId)
  if (filter.since) query.where('e.timestamp', '>=', filter.since)
  if (filter.until) query.where('e.timestamp', '<', filter.until)
  if (filter.assets.length > 0) query.whereIn('e.asset_id', db('asset').select('id').whereIn('name', filter.assets).orWhereIn('uri', filter.assets))
  const rows = (await query) as Array<{source_dag_id: string; source_run_id: string; source_task_id: string; source_map_index: number | null}>
  return rows.map((r) => ({dagId: r.source_dag_id, runId: r.source_run_id, taskId: r.source_task_id, mapIndex: r.source_map_index ?? -1}))
}

/** Events without a source task (REST- or trigger-created): counted as external, never a finding. */
export async function countExternalEvents(db: Knex, filter: EventFilter & {sourceDagId?: string | undefined}): Promise<number> {
  if (filter.sourceDagId) return 0
  const query = db('asset_event as e').where((q) => q.whereNull('e.source_dag_id').orWhereNull('e.source_run_id').orWhereNull('e.source_task_id')).count({n: '*'})
  if (filter.since) query.where('e.timestamp', '>=', filter.since)
  if (filter.until) query.where('e.timestamp', '<', filter.until)
  if (filter.assets.length > 0) query.whereIn('e.asset_id', db('asset').select('id').whereIn('name', filter.assets).orWhereIn('uri', filter.assets))
  const row = (await query.first()) as {n: string | number}
  return Number(row.n)
}
