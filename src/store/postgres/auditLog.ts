import type {Executor} from '../../engine/engine.js'
import {prepared} from '../../engine/prepared.js'
import type {AuditLogStore, LogSubject} from '../families/audit.js'

/**
 * One row of Airflow's `log` table (the audit log its UI shows), with the columns Airflow's own
 * `Log` model fills (airflow-core/src/airflow/models/log.py, Airflow 3.0 and later): dag, task, run, map index, try
 * number, the event, the run's logical date, the DAG's owners, and an extra JSON text saying who
 * did it and how.
 */
function insertLogRow() {
  const insert = prepared(
    'insert_log',
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     values (clock_timestamp(), $1, $2, $3, $4::int, $5::int, $6, $7::timestamptz, $8, $9)
     returning id`,
  )
  return async (ex: Executor, subject: LogSubject, event: string, extra: string): Promise<{logId: number}> => {
    const [row] = await ex.query<{id: number}>(
      insert([
        subject.dagId,
        subject.taskId,
        subject.runId,
        subject.mapIndex,
        subject.tryNumber,
        event,
        subject.logicalDate,
        subject.owners,
        extra,
      ]),
    )
    return {logId: row!.id}
  }
}

/** Whether an audit `log` row exists: how a writer learns, after a lost COMMIT, that it landed. */
function logRowExists() {
  const exists = prepared('log_exists', 'select 1 from log where id = $1')
  return async (ex: Executor, logId: number): Promise<boolean> => (await ex.query(exists([logId]))).length > 0
}

/** The audit log family. */
export function auditLogStore(): AuditLogStore {
  return {insertLogRow: insertLogRow(), logRowExists: logRowExists()}
}
