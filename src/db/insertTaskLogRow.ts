import type {Knex} from 'knex'

import type {TaskInstanceContext} from '../airflow/taskInstance.js'
import {bindings} from './bindings.js'

/**
 * One row of Airflow's `log` table (the audit log its UI shows) for a task instance: dag, task,
 * run, map index, try number, the event, the run's logical date, the DAG's owners, and an extra
 * JSON text saying who did it and how.
 */
export async function insertTaskLogRow(trx: Knex.Transaction, ti: TaskInstanceContext, event: string, extra: string): Promise<{logId: number}> {
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     values (clock_timestamp(), ?, ?, ?, ?, ?, ?, ?::timestamptz, ?, ?)
     returning id`,
    bindings(ti.dagId, ti.taskId, ti.runId, ti.mapIndex, ti.tryNumber, event, ti.logicalDate, ti.owners, extra),
  )
  return {logId: rows[0]!.id}
}
