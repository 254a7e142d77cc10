import type {Knex} from 'knex'

import {bindings} from './bindings.js'

export interface SuccessAuditEntry {
  logicalDate: Date | null
  owner: string | null
  /** JSON text for log.extra (Airflow writes {"host_name": …}; airlock adds who and how). */
  extra: string
}

/**
 * Protocol step 4 for `complete`: what Airflow's ti_update_state writes on success, in ONE
 * statement so the row lock is held for a single round trip before COMMIT: state, end_date
 * (given, or the clock now), duration computed in SQL from start_date, next_method and
 * next_kwargs cleared, updated_at; and the `log` row that Airflow's UI shows as the audit log.
 */
export async function markTaskInstanceSuccess(trx: Knex.Transaction, tiId: string, endDate: Date | null, audit: SuccessAuditEntry): Promise<{logId: number} | undefined> {
  const {rows} = await trx.raw<{rows: Array<{id: number}>}>(
    `with stamp as (
       select coalesce(?::timestamptz, clock_timestamp()) as end_date
     ), updated as (
       update task_instance ti
          set state = 'success', end_date = stamp.end_date,
              duration = extract(epoch from (stamp.end_date - ti.start_date)),
              next_method = null, next_kwargs = null, updated_at = clock_timestamp()
         from stamp
        where ti.id = ?::uuid
       returning ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number
     )
     insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     select clock_timestamp(), dag_id, task_id, run_id, map_index, try_number, 'success', ?::timestamptz, ?, ?
       from updated
     returning id`,
    bindings(endDate, tiId, audit.logicalDate, audit.owner, audit.extra),
  )
  return rows[0] ? {logId: rows[0].id} : undefined
}
