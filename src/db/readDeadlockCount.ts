import type {Knex} from 'knex'

/** pg_stat_database.deadlocks for this database: compared across the sampling window. */
export async function readDeadlockCount(db: Knex): Promise<number> {
  const {rows} = await db.raw<{rows: Array<{deadlocks: string}>}>('select deadlocks from pg_stat_database where datname = current_database()')
  return Number(rows[0]?.deadlocks ?? 0)
}
