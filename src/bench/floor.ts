import {performance} from 'node:perf_hooks'

import pg from 'pg'

/**
 * The floor for the lock hold: a few lines of raw node-postgres doing the same inserts as
 * airlock's registration (events, the audit log row, the sorted queue upsert), then SELECT … FOR
 * UPDATE, the same UPDATE, and COMMIT. COMMIT must flush the registration's WAL, so no ordering
 * can hold the lock for less; what airlock adds above it is its own overhead.
 */
export interface FloorPlan {
  tiId: string
  source: {dagId: string; runId: string; taskId: string}
  assetIds: number[]
  /** (asset_id, target_dag_id) pairs, sorted. */
  queue: Array<[number, string]>
}

export async function floorCompletion(client: pg.Client, plan: FloorPlan): Promise<{lockHoldMs: number; registerMs: number}> {
  await client.query('begin')
  const registerStart = performance.now()
  await client.query(
    `insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
     select a, '{}'::json, $2, $3, $4, -1, clock_timestamp() from unnest($1::int[]) as a returning id`,
    [plan.assetIds, plan.source.dagId, plan.source.runId, plan.source.taskId],
  )
  await client.query(
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, extra) values (clock_timestamp(), $1, $2, $3, -1, 1, 'success', '{}')`,
    [plan.source.dagId, plan.source.taskId, plan.source.runId],
  )
  if (plan.queue.length > 0) {
    await client.query(
      `insert into asset_dag_run_queue as q (asset_id, target_dag_id, created_at)
       select a, d, clock_timestamp() from unnest($1::int[], $2::text[]) as u(a, d) order by a, d
       on conflict (asset_id, target_dag_id) do update set created_at = greatest(q.created_at, excluded.created_at)`,
      [plan.queue.map((q) => q[0]), plan.queue.map((q) => q[1])],
    )
  }

  const registerMs = performance.now() - registerStart
  await client.query('select state from task_instance where id = $1 for update', [plan.tiId])
  const locked = performance.now()
  await client.query(
    `update task_instance set state = 'success', end_date = clock_timestamp(), duration = extract(epoch from (clock_timestamp() - start_date)),
            next_method = null, next_kwargs = null, updated_at = clock_timestamp() where id = $1`,
    [plan.tiId],
  )
  await client.query('commit')
  return {lockHoldMs: performance.now() - locked, registerMs}
}
