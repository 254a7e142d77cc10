import type {Knex} from 'knex'

import {bindings} from './bindings.js'

/** asset_alias_asset_event rows: which alias each event was emitted through (one statement). */
export async function insertAliasEventLinks(trx: Knex.Transaction, links: ReadonlyArray<{aliasId: number; eventId: number}>): Promise<void> {
  if (links.length === 0) return
  await trx.raw(
    `insert into asset_alias_asset_event (alias_id, event_id)
     select * from unnest(?::int[], ?::int[]) as l(alias_id, event_id) order by 1, 2
     on conflict do nothing`,
    bindings(links.map((l) => l.aliasId), links.map((l) => l.eventId)),
  )
}
