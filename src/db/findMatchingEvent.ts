import type {Knex} from 'knex'

import {bindings} from './bindings.js'
import {sourceValues, type EventContent} from './insertEventCopy.js'

/**
 * An existing event with the same content (asset, source attribution, extra, partition key) at or
 * after `since`, for --skip-existing: replaying an export into a database that already has some
 * of its events must not double them.
 */
export async function findMatchingEvent(trx: Knex.Transaction, content: EventContent, since: Date, partitionColumn: boolean): Promise<number | undefined> {
  // Two replays of one export running at once would both find nothing and both insert: one
  // transaction-scoped advisory lock per event content makes the check-then-insert atomic.
  await trx.raw('select pg_advisory_xact_lock(hashtextextended(?, 0))', [JSON.stringify([content.assetId, content.extra, ...sourceValues(content), content.partitionKey])])
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `select id from asset_event
      where asset_id = ? and extra::jsonb = ?::jsonb
        and source_dag_id is not distinct from ? and source_run_id is not distinct from ?
        and source_task_id is not distinct from ? and source_map_index is not distinct from ?
        and "timestamp" >= ?::timestamptz
        ${partitionColumn ? 'and partition_key is not distinct from ?' : ''}
      order by id limit 1`,
    bindings(
      content.assetId,
      content.extra,
      ...sourceValues(content),
      since,
      ...(partitionColumn ? [content.partitionKey] : []),
    ),
  )
  return rows[0]?.id
}
