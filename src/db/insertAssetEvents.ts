import type {Knex} from 'knex'

import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {driverConnectionOf, prepared} from './driverConnection.js'

export interface NewAssetEvent {
  assetId: number
  /** JSON text of the event's extra ({} when none). */
  extra: string
}

export interface InsertedEvent {
  eventId: number
  assetId: number
}

/**
 * One multi-row INSERT … RETURNING for all of a task instance's events, whatever their number
 * (DESIGN §1): the arrays travel as two parameters and unnest server-side. Every event gets the
 * same timestamp, taken from the clock at insert time (UTC, never backdated: before 3.4 the
 * scheduler ignores events older than the last asset-triggered run).
 */
export async function insertAssetEvents(
  trx: Knex.Transaction,
  source: TaskInstanceKey,
  events: readonly NewAssetEvent[],
  partitionKey: {column: boolean; value: string | null},
): Promise<InsertedEvent[]> {
  if (events.length === 0) return []
  const partitionColumn = partitionKey.column ? ', partition_key' : ''
  const partitionValue = partitionKey.column ? ', $7::varchar' : ''
  const values: unknown[] = [source.dagId, source.runId, source.taskId, source.mapIndex, events.map((e) => e.assetId), events.map((e) => e.extra)]
  if (partitionKey.column) values.push(partitionKey.value)
  const rows = await prepared<{id: number; asset_id: number}>(
    await driverConnectionOf(trx),
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partitionColumn})
     select e.asset_id, e.extra::json, $1, $2, $3, $4::int, now.ts${partitionValue}
       from unnest($5::int[], $6::text[]) with ordinality as e(asset_id, extra, n)
      cross join (select clock_timestamp() as ts) as now
      order by e.n
     returning id, asset_id`,
    values,
  )
  return rows.map((row) => ({eventId: row.id, assetId: row.asset_id}))
}
