import type {Knex} from 'knex'

/**
 * The alembic head(s) recorded by Airflow's migrations, or undefined when the database has no
 * public.alembic_version table (then it is not an Airflow database at all).
 */
export async function readAlembicHead(db: Knex | Knex.Transaction): Promise<string[] | undefined> {
  const {rows: tables} = await db.raw<{rows: Array<{present: string | null}>}>(`select to_regclass('public.alembic_version')::text as present`)
  if (!tables[0]?.present) return undefined
  const {rows} = await db.raw<{rows: Array<{version_num: string}>}>('select version_num from public.alembic_version order by version_num')
  return rows.map((row) => row.version_num)
}
