import type {Knex} from 'knex'

import type {TaskInstanceContext} from '../airflow/taskInstance.js'
import {bindings} from './bindings.js'

/**
 * Which of the given (active, declared outlet) assets have NO event attributed to this task
 * instance at or after its start_date: the events its last successful try should have emitted.
 * `ignoreEventIds` leaves out events this very transaction wrote (for the recheck under the lock).
 */
export async function readMissingOutlets(trx: Knex.Transaction, ti: TaskInstanceContext, assetIds: readonly number[], ignoreEventIds: readonly number[] = []): Promise<number[]> {
  if (assetIds.length === 0) return []
  const {rows} = await trx.raw<{rows: Array<{asset_id: number}>}>(
    `select a.asset_id
       from unnest(?::int[]) as a(asset_id)
      where not exists (
        select 1 from asset_event e
         where e.asset_id = a.asset_id
           and e.source_dag_id = ? and e.source_run_id = ? and e.source_task_id = ? and e.source_map_index = ?
           and e."timestamp" >= coalesce(?::timestamptz, '-infinity')
           and e.id <> all(?::int[]))
      order by a.asset_id`,
    bindings(assetIds, ti.dagId, ti.runId, ti.taskId, ti.mapIndex, ti.startDate, ignoreEventIds),
  )
  return rows.map((row) => row.asset_id)
}
