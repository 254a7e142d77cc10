import type {Knex} from 'knex'

export type TablePrivilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE'

export interface PrivilegeCheck {
  object: string
  kind: 'table' | 'sequence'
  privilege: TablePrivilege | 'USAGE'
}

export interface PrivilegeResult extends PrivilegeCheck {
  granted: boolean
}

/** Asks the server, per object, whether the current user holds the privilege (missing objects: not granted). */
export async function readTablePrivileges(db: Knex | Knex.Transaction, checks: readonly PrivilegeCheck[]): Promise<PrivilegeResult[]> {
  if (checks.length === 0) return []
  const {rows} = await db.raw<{rows: Array<{granted: boolean | null}>}>(
    `select case when to_regclass(c.item->>'object') is null then null
                 when c.item->>'kind' = 'sequence' then has_sequence_privilege(c.item->>'object', c.item->>'privilege')
                 else has_table_privilege(c.item->>'object', c.item->>'privilege') end as granted
       from jsonb_array_elements(?::jsonb) with ordinality as c(item, n)
      order by c.n`,
    [JSON.stringify(checks)],
  )
  return checks.map((check, index) => ({...check, granted: rows[index]?.granted === true}))
}
