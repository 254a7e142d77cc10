import type {Knex} from 'knex'

/**
 * The task_instance row at a physical position (page, tuple): how a waiter's tuple lock names the
 * row it queues for. Best effort: an update since may have moved the row (the caller says so).
 */
export async function findTaskInstanceByTuple(db: Knex, page: number, tuple: number): Promise<{id: string; dag_id: string; run_id: string; task_id: string; map_index: number} | undefined> {
  const {rows} = await db.raw<{rows: Array<{id: string; dag_id: string; run_id: string; task_id: string; map_index: number}>}>(
    `select id, dag_id, run_id, task_id, map_index from task_instance where ctid = format('(%s,%s)', ?::int, ?::int)::tid`,
    [page, tuple],
  )
  return rows[0]
}
