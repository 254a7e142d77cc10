import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import {bindings} from './bindings.js'

export interface StoredEvent {
  id: number
  assetId: number
  assetName: string
  assetUri: string
  /** JSON text. */
  extra: string
  source: {dagId: string; runId: string; taskId: string; mapIndex: number} | null
  partitionKey: string | null
  timestamp: Date
  aliasIds: number[]
  /** For the audit row: the source run's logical date and the source DAG's owners. */
  logicalDate: Date | null
  owners: string | null
}

/** Events by id, with their asset, source attribution, partition key and the aliases they went through. */
export async function readEventsById(db: Knex | Knex.Transaction, ids: readonly number[], capabilities: Pick<Capabilities, 'eventPartitionKey'>): Promise<StoredEvent[]> {
  const partitionKey = capabilities.eventPartitionKey ? 'e.partition_key' : 'null::varchar'
  const {rows} = await db.raw<{rows: Array<Record<string, unknown>>}>(
    `select e.id, e.asset_id, a.name as asset_name, a.uri as asset_uri, e.extra::text as extra,
            e.source_dag_id, e.source_run_id, e.source_task_id, e.source_map_index, ${partitionKey} as partition_key, e."timestamp",
            coalesce((select array_agg(l.alias_id order by l.alias_id) from asset_alias_asset_event l where l.event_id = e.id), '{}') as alias_ids,
            dr.logical_date, d.owners
       from asset_event e
       join asset a on a.id = e.asset_id
       left join dag_run dr on dr.dag_id = e.source_dag_id and dr.run_id = e.source_run_id
       left join dag d on d.dag_id = e.source_dag_id
      where e.id = any(?::int[])
      order by e.id`,
    bindings([...ids]),
  )
  return rows.map((row) => ({
    id: row.id as number,
    assetId: row.asset_id as number,
    assetName: row.asset_name as string,
    assetUri: row.asset_uri as string,
    extra: row.extra as string,
    source: row.source_dag_id && row.source_run_id && row.source_task_id
      ? {dagId: row.source_dag_id as string, runId: row.source_run_id as string, taskId: row.source_task_id as string, mapIndex: (row.source_map_index as number | null) ?? -1}
      : null,
    partitionKey: row.partition_key as string | null,
    timestamp: row.timestamp as Date,
    aliasIds: row.alias_ids as number[],
    logicalDate: row.logical_date as Date | null,
    owners: row.owners as string | null,
  }))
}
