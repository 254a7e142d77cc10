import type {Knex} from 'knex'

import {driverConnectionOf, prepared} from './driverConnection.js'

/** What a `log` row is about: a task instance, or (for events without a source task) nothing. */
export interface LogSubject {
  dagId: string | null
  taskId: string | null
  runId: string | null
  mapIndex: number | null
  tryNumber: number | null
  logicalDate: Date | null
  owners: string | null
}

/**
 * One row of Airflow's `log` table (the audit log its UI shows): dag, task, run, map index, try
 * number, the event, the run's logical date, the DAG's owners, and an extra JSON text saying who
 * did it and how.
 */
export async function insertTaskLogRow(trx: Knex.Transaction, subject: LogSubject, event: string, extra: string): Promise<{logId: number}> {
  const rows = await prepared<{id: number}>(
    await driverConnectionOf(trx),
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     values (clock_timestamp(), $1, $2, $3, $4::int, $5::int, $6, $7::timestamptz, $8, $9)
     returning id`,
    [subject.dagId, subject.taskId, subject.runId, subject.mapIndex, subject.tryNumber, event, subject.logicalDate, subject.owners, extra],
  )
  return {logId: rows[0]!.id}
}
