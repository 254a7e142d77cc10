import type {Knex} from 'knex'

export interface ServerSetting {
  name: string
  setting: string
  unit: string | null
  source: string
}

/** The settings that decide how long sessions wait on and hold row locks (those that exist on this server). */
export async function readLockSettings(db: Knex | Knex.Transaction, names: readonly string[]): Promise<ServerSetting[]> {
  const {rows} = await db.raw<{rows: ServerSetting[]}>(
    `select name, setting, unit, source from pg_settings where name = any(?) order by name`,
    [[...names]],
  )
  return rows
}
