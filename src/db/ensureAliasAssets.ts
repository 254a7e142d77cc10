import type {Knex} from 'knex'

export interface AliasEmission {
  aliasName: string
  assetName: string
  assetUri: string
}

export interface ResolvedAliasEmission extends AliasEmission {
  aliasId: number
  assetId: number
}

/**
 * Events emitted through an asset alias name their asset at run time, so the asset may not exist
 * yet. As Airflow does, the asset is created (and made active) when missing and linked to the
 * alias (asset_alias_asset). Three statements whatever the number of emissions; only called when
 * there are alias emissions. Emissions whose alias does not exist are not returned.
 */
export async function ensureAliasAssets(trx: Knex.Transaction, emissions: readonly AliasEmission[]): Promise<ResolvedAliasEmission[]> {
  if (emissions.length === 0) return []
  const arrays = [emissions.map((e) => e.aliasName), emissions.map((e) => e.assetName), emissions.map((e) => e.assetUri)]
  const input = 'unnest(?::text[], ?::text[], ?::text[]) as i(alias_name, asset_name, asset_uri)'

  await trx.raw(
    `insert into asset (name, uri, "group", extra, created_at, updated_at)
     select wanted.asset_name, wanted.asset_uri, 'asset', '{}'::json, clock_timestamp(), clock_timestamp()
       from (select distinct i.asset_name, i.asset_uri from ${input} join asset_alias al on al.name = i.alias_name) as wanted
      order by 1, 2
     on conflict (name, uri) do nothing`,
    arrays,
  )
  await trx.raw(
    `insert into asset_active (name, uri)
     select distinct i.asset_name, i.asset_uri from ${input} join asset_alias al on al.name = i.alias_name
      order by 1, 2
     on conflict do nothing`,
    arrays,
  )
  const {rows} = await trx.raw<{rows: Array<{alias_id: number; alias_name: string; asset_id: number; asset_name: string; asset_uri: string}>}>(
    `with resolved as (
       select al.id as alias_id, i.alias_name, a.id as asset_id, i.asset_name, i.asset_uri
         from ${input}
         join asset_alias al on al.name = i.alias_name
         join asset a on a.name = i.asset_name and a.uri = i.asset_uri
     ), linked as (
       insert into asset_alias_asset (alias_id, asset_id)
       select distinct alias_id, asset_id from resolved order by 1, 2
       on conflict do nothing
     )
     select * from resolved`,
    arrays,
  )
  return rows.map((row) => ({aliasId: row.alias_id, aliasName: row.alias_name, assetId: row.asset_id, assetName: row.asset_name, assetUri: row.asset_uri}))
}
