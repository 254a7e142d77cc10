import type {Knex} from 'knex'

import type {Capabilities} from '../airflow/schema.js'
import type {StoredState, TaskInstanceContext, TaskInstanceRef} from '../airflow/taskInstance.js'

interface TaskInstanceRow {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  state: string | null
  try_number: number | null
  start_date: Date | null
  end_date: Date | null
  dag_run_id: number
  logical_date: Date | null
  partition_key: string | null
  owners: string | null
}

/**
 * Protocol step 1: the task instance with its run and DAG, WITHOUT a lock. Decisions made on this
 * read are only early exits; the commit decision is taken on the locked read.
 */
export async function readTaskInstance(db: Knex.Transaction | Knex, ref: TaskInstanceRef, capabilities: Pick<Capabilities, 'eventPartitionKey'>): Promise<TaskInstanceContext | undefined> {
  const partitionKey = capabilities.eventPartitionKey ? 'dr.partition_key' : 'null::varchar'
  const where = 'tiId' in ref ? 'ti.id = ?::uuid' : 'ti.dag_id = ? and ti.run_id = ? and ti.task_id = ? and ti.map_index = ?'
  const bindings = 'tiId' in ref ? [ref.tiId] : [ref.key.dagId, ref.key.runId, ref.key.taskId, ref.key.mapIndex]
  const {rows} = await db.raw<{rows: TaskInstanceRow[]}>(
    `select ti.id, ti.dag_id, ti.run_id, ti.task_id, ti.map_index, ti.state, ti.try_number, ti.start_date, ti.end_date,
            dr.id as dag_run_id, dr.logical_date, ${partitionKey} as partition_key, d.owners
       from task_instance ti
       join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id
       left join dag d on d.dag_id = ti.dag_id
      where ${where}`,
    bindings,
  )
  const row = rows[0]
  if (!row) return undefined
  return {
    id: row.id,
    dagId: row.dag_id,
    runId: row.run_id,
    taskId: row.task_id,
    mapIndex: row.map_index,
    state: row.state as StoredState,
    tryNumber: row.try_number,
    startDate: row.start_date,
    endDate: row.end_date,
    dagRunId: row.dag_run_id,
    logicalDate: row.logical_date,
    partitionKey: row.partition_key,
    owners: row.owners,
  }
}
