import type {Knex} from 'knex'

import {bindings} from './bindings.js'

/**
 * Removes duplicate events that no dag run consumed, under the rules of a writer: lock the rows
 * first (FOR UPDATE, in id order), then recheck consumption with a fresh statement (a scheduler
 * may have consumed one since the audit read it), then delete only the unconsumed ones. Alias
 * links and (3.4) queue rows go with them by their ON DELETE CASCADE keys; partitioned-asset key
 * log rows have no foreign key and are deleted explicitly.
 */
export async function removeDuplicateEvents(trx: Knex.Transaction, eventIds: readonly number[], partitionTables: boolean): Promise<{removed: number[]; consumed: number[]}> {
  await trx.raw('select id from asset_event where id = any(?::int[]) order by id for update', bindings([...eventIds]))
  const {rows: consumedRows} = await trx.raw<{rows: Array<{event_id: number}>}>('select distinct event_id from dagrun_asset_event where event_id = any(?::int[])', bindings([...eventIds]))
  const consumed = consumedRows.map((row) => row.event_id)
  const removable = eventIds.filter((id) => !consumed.includes(id))
  if (removable.length === 0) return {removed: [], consumed}
  if (partitionTables) await trx.raw('delete from partitioned_asset_key_log where asset_event_id = any(?::int[])', bindings(removable))
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>('delete from asset_event where id = any(?::int[]) returning id', bindings(removable))
  return {removed: rows.map((row) => row.id).sort((a, b) => a - b), consumed}
}
