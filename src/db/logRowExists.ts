import type {Knex} from 'knex'

/** Whether an audit `log` row exists: how a writer learns, after a lost COMMIT, that it landed. */
export async function logRowExists(db: Knex, logId: number): Promise<boolean> {
  const {rows} = await db.raw<{rows: unknown[]}>('select 1 from log where id = ?', [logId])
  return rows.length > 0
}
