import type {Knex} from 'knex'

export interface ServerInfo {
  version: string
  versionNum: number
  currentUser: string
  database: string
  isSuperuser: boolean
  /** Member of pg_monitor (or superuser): can see every session's locks and queries. */
  canMonitor: boolean
}

interface ServerInfoRow {
  version: string
  version_num: string
  current_user: string
  database: string
  is_superuser: boolean
  can_monitor: boolean
}

export async function readServerInfo(db: Knex | Knex.Transaction): Promise<ServerInfo> {
  const {rows} = await db.raw<{rows: ServerInfoRow[]}>(`
    select current_setting('server_version') as version,
           current_setting('server_version_num') as version_num,
           current_user as current_user,
           current_database() as database,
           (select rolsuper from pg_roles where rolname = current_user) as is_superuser,
           pg_has_role(current_user, 'pg_monitor', 'member') as can_monitor`)
  const row = rows[0]!
  return {
    version: row.version,
    versionNum: Number(row.version_num),
    currentUser: row.current_user,
    database: row.database,
    isSuperuser: row.is_superuser,
    canMonitor: row.can_monitor || row.is_superuser,
  }
}
