import type {Knex} from 'knex'

import type {TaskInstanceKey} from '../airflow/taskInstance.js'
import {bindings} from './bindings.js'

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
  const partitionValue = partitionKey.column ? ', ?::varchar' : ''
  const values: unknown[] = [source.dagId, source.runId, source.taskId, source.mapIndex]
  if (partitionKey.column) values.push(partitionKey.value)
  values.push(events.map((e) => e.assetId), events.map((e) => e.extra))
  const {rows} = await trx.raw<{rows: Array<{id: number; asset_id: number}>}>(
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partitionColumn})
     select e.asset_id, e.extra::json, ?, ?, ?, ?, now.ts${partitionValue}
       from unnest(?::int[], ?::text[]) with ordinality as e(asset_id, extra, n)
      cross join (select clock_timestamp() as ts) as now
      order by e.n
     returning id, asset_id`,
    bindings(...values),
  )
  return rows.map((row) => ({eventId: row.id, assetId: row.asset_id}))
}
