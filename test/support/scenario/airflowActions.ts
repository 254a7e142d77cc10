import {createHash, randomUUID} from 'node:crypto'

import type {Knex} from 'knex'

/*
 * What Airflow itself does to the rows a test has built, written as Airflow writes it (each cites
 * the Airflow code it mirrors): a retry, a rerun, a worker's success log row, a new DAG version.
 * A test uses them to move the world on under airlock, or between two of its steps.
 */

/**
 * What Airflow 3 does when a task instance is retried (`TaskInstance.prepare_db_for_next_try`):
 * the finished try is archived in task_instance_history and the row gets a NEW id, the next
 * try number and the given state. Runs on `knex` (a holder's transaction, to time it inside a
 * race); returns the new id.
 */
export async function retryAsAirflowDoes(knex: Knex, tiId: string, state: string): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, updated_at, 'failed', pool, pool_slots, dag_version_id from task_instance where id = ?`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), try_number = try_number + 1, state = ?, start_date = now(), end_date = null
      where id = ? returning id`,
    [state, tiId],
  )
  return rows[0]!.id
}

/**
 * A running try that failed and will be retried, as Airflow 3's execution API records it
 * (`ti_update_state` with a retry payload, airflow-core/src/airflow/api_fastapi/execution_api/
 * routes/task_instances.py): `prepare_db_for_next_try` archives the try (`record_ti` writes an
 * unfinished try as failed, with an end date) and gives the row a NEW id; the row then reads
 * up_for_retry with its end date, and keeps its try_number until `DagRun.schedule_tis` runs it
 * again. Returns the new id.
 */
export async function failForRetryAsAirflowDoes(knex: Knex, tiId: string): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, clock_timestamp(), duration, updated_at, 'failed', pool, pool_slots, dag_version_id
       from task_instance where id = ?`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), state = 'up_for_retry', end_date = clock_timestamp(), updated_at = clock_timestamp()
      where id = ? returning id`,
    [tiId],
  )
  return rows[0]!.id
}

/**
 * A finished try run again as Airflow 3 runs it, step by step, each a write of its own:
 * 1. the clear (`clear_task_instances` → `TaskInstance.prepare_db_for_next_try`,
 *    airflow-core/src/airflow/models/taskinstance.py): `TaskInstanceHistory.record_ti` archives
 *    the row as it stands (its state, dates and updated_at), unless that try is archived already
 *    (a try archived for its retry: record_ti returns early, airflow-core/src/airflow/models/
 *    taskinstancehistory.py), the row gets a NEW id and state NULL;
 * 2. the scheduler (`DagRun.schedule_tis`, airflow-core/src/airflow/models/dagrun.py): state
 *    scheduled, `scheduled_dttm` now, `try_number + 1`;
 * 3. unless `until` is 'scheduled', a worker starts it (the execution API's `ti_run`): state
 *    running, `start_date` now, end_date cleared.
 * Every update stamps updated_at (the ORM's onupdate). Returns the new id.
 */
export async function rerunAsAirflowDoes(
  knex: Knex,
  tiId: string,
  until: 'scheduled' | 'running' = 'running',
): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id
       from task_instance t where id = ?
        and not exists (select 1 from task_instance_history h
                         where h.dag_id = t.dag_id and h.task_id = t.task_id and h.run_id = t.run_id
                           and h.map_index = t.map_index and h.try_number = t.try_number)`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), state = null, updated_at = clock_timestamp() where id = ? returning id`,
    [tiId],
  )
  const id = rows[0]!.id
  await knex.raw(
    `update task_instance set state = 'scheduled', scheduled_dttm = clock_timestamp(), try_number = try_number + 1, updated_at = clock_timestamp()
      where id = ?`,
    [id],
  )
  if (until === 'running')
    await knex.raw(
      `update task_instance set state = 'running', start_date = clock_timestamp(), end_date = null, updated_at = clock_timestamp()
        where id = ?`,
      [id],
    )
  return id
}

/**
 * The log row Airflow's worker path writes when the task instance's current try succeeds, from 3.2
 * (`ti_update_state`, apache/airflow #61932): evidence that this try really finished, so events it
 * lacks were lost.
 */
export async function logWorkerSuccess(knex: Knex, tiId: string): Promise<void> {
  await knex.raw(
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     select coalesce(ti.end_date, now()), ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, 'success', dr.logical_date, d.owners,
            '{"host_name": "worker-1"}'
       from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id join dag d on d.dag_id = ti.dag_id
      where ti.id = ?`,
    [tiId],
  )
}

/**
 * A newer version of a DAG, as the DAG processor writes one when the file changes: a dag_version
 * (the next version number, created after the others) with a serialized DAG edited from the
 * latest one. Returns its id. Runs keep the version they were created with.
 */
export async function addDagVersion(
  knex: Knex,
  dagId: string,
  edit: (data: {dag: {tasks: Array<{__var: Record<string, unknown>}>}}) => void,
): Promise<string> {
  const {rows} = await knex.raw<{rows: Array<{data: unknown; version_number: number}>}>(
    `select sd.data, v.version_number from serialized_dag sd join dag_version v on v.id = sd.dag_version_id
      where sd.dag_id = ? order by v.created_at desc limit 1`,
    [dagId],
  )
  const latest = rows[0]!
  const data = (typeof latest.data === 'string' ? JSON.parse(latest.data) : latest.data) as {
    dag: {tasks: Array<{__var: Record<string, unknown>}>}
  }
  edit(data)
  const id = randomUUID()
  const later = knex.raw(`now() + interval '1 second'`)
  await knex('dag_version').insert({
    id,
    version_number: latest.version_number + 1,
    dag_id: dagId,
    bundle_name: 'dags-folder',
    created_at: later,
    last_updated: later,
  })
  await knex('serialized_dag').insert({
    id: randomUUID(),
    dag_id: dagId,
    data: JSON.stringify(data),
    created_at: later,
    last_updated: later,
    dag_hash: createHash('md5').update(JSON.stringify(data)).digest('hex'),
    dag_version_id: id,
  })
  return id
}
