import type {Knex} from 'knex'

/* Row readers: what a test reads back from the Airflow tables after a write, as plain rows. */

export interface TiRow {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  state: string | null
  start_date: Date | null
  end_date: Date | null
  duration: number | null
  next_method: string | null
  next_kwargs: unknown
  try_number: number | null
}

export async function ti(knex: Knex, dagId: string, taskId: string): Promise<TiRow> {
  const row = (await knex('task_instance').where({dag_id: dagId, task_id: taskId}).orderBy('run_id').first()) as
    TiRow | undefined
  if (!row) throw new Error(`no TI ${dagId}.${taskId}`)
  return row
}

export async function tiById(knex: Knex, id: string): Promise<TiRow> {
  return (await knex('task_instance').where({id}).first()) as TiRow
}

export async function eventsOf(knex: Knex, t: Pick<TiRow, 'dag_id' | 'run_id' | 'task_id'>) {
  return knex('asset_event as e')
    .join('asset as a', 'a.id', 'e.asset_id')
    .where({'e.source_dag_id': t.dag_id, 'e.source_run_id': t.run_id, 'e.source_task_id': t.task_id})
    .select('e.*', 'a.name as asset_name')
    .orderBy('e.id') as Promise<Array<Record<string, unknown> & {asset_name: string; extra: unknown; id: number}>>
}

export async function countRows(knex: Knex, table: string): Promise<number> {
  const row = (await knex(table).count({n: '*'}).first()) as {n: string | number}
  return Number(row.n)
}

/** Row counts of every table a writer touches: "nothing written" is asserted by comparing these. */
export async function writeFootprint(knex: Knex): Promise<Record<string, number>> {
  const tables = [
    'asset_event',
    'asset_dag_run_queue',
    'asset_alias_asset_event',
    'log',
    'asset',
    'asset_active',
    'asset_alias_asset',
  ]
  const out: Record<string, number> = {}
  for (const table of tables) out[table] = await countRows(knex, table)
  const {rows} = await knex.raw<{rows: Array<{n: string}>}>(
    `select count(*) as n from task_instance where state = 'success'`,
  )
  out.success_tis = Number(rows[0]!.n)
  return out
}
