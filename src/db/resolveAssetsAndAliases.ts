import type {Knex} from 'knex'

import {bindings} from './bindings.js'

/** Asset ids by (name, uri) and alias ids by name, for lines of an export replayed elsewhere. */
export async function resolveAssetsAndAliases(
  db: Knex | Knex.Transaction,
  assets: ReadonlyArray<{name: string; uri: string}>,
  aliasNames: readonly string[],
): Promise<{assetIds: Map<string, number>; aliasIds: Map<string, number>}> {
  const {rows: assetRows} = await db.raw<{rows: Array<{id: number; name: string; uri: string}>}>(
    `select a.id, a.name, a.uri from asset a join unnest(?::text[], ?::text[]) as k(name, uri) on a.name = k.name and a.uri = k.uri`,
    bindings(assets.map((a) => a.name), assets.map((a) => a.uri)),
  )
  const {rows: aliasRows} = await db.raw<{rows: Array<{id: number; name: string}>}>('select id, name from asset_alias where name = any(?::text[])', bindings([...aliasNames]))
  return {
    assetIds: new Map(assetRows.map((row) => [assetKey(row), row.id])),
    aliasIds: new Map(aliasRows.map((row) => [row.name, row.id])),
  }
}

export const assetKey = (asset: {name: string; uri: string}) => `${asset.name}\u0000${asset.uri}`
