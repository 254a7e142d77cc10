import type {Knex} from 'knex'

export interface OutletAsset {
  assetId: number
  name: string
  uri: string
  /** A row in asset_active with the same name and uri: only active assets get events. */
  active: boolean
}

/** The task's declared outlets (task_outlet_asset_reference), with whether each asset is active. */
export async function readOutletAssets(db: Knex.Transaction | Knex, dagId: string, taskId: string): Promise<OutletAsset[]> {
  const {rows} = await db.raw<{rows: Array<{id: number; name: string; uri: string; active: boolean}>}>(
    `select a.id, a.name, a.uri, (aa.name is not null) as active
       from task_outlet_asset_reference r
       join asset a on a.id = r.asset_id
       left join asset_active aa on aa.name = a.name and aa.uri = a.uri
      where r.dag_id = ? and r.task_id = ?
      order by a.id`,
    [dagId, taskId],
  )
  return rows.map((row) => ({assetId: row.id, name: row.name, uri: row.uri, active: row.active}))
}
