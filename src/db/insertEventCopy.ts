import type {Knex} from 'knex'

import {bindings} from './bindings.js'

export interface EventContent {
  assetId: number
  /** JSON text. */
  extra: string
  source: {dagId: string; runId: string; taskId: string; mapIndex: number} | null
  partitionKey: string | null
}

/** source_dag_id, source_run_id, source_task_id, source_map_index of an event's content. */
export const sourceValues = (content: EventContent) => [content.source?.dagId ?? null, content.source?.runId ?? null, content.source?.taskId ?? null, content.source?.mapIndex ?? -1]

/**
 * A new asset_event with the given content and a fresh timestamp (UTC now, never the original's:
 * before 3.4 the scheduler ignores events older than the last asset-triggered run).
 */
export async function insertEventCopy(trx: Knex.Transaction, content: EventContent, partitionColumn: boolean): Promise<number> {
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp"${partitionColumn ? ', partition_key' : ''})
     values (?, ?::json, ?, ?, ?, ?, clock_timestamp()${partitionColumn ? ', ?' : ''})
     returning id`,
    bindings(
      content.assetId,
      content.extra,
      ...sourceValues(content),
      ...(partitionColumn ? [content.partitionKey] : []),
    ),
  )
  return rows[0]!.id
}
