import {prepared, type DriverConnection} from './driverConnection.js'

/**
 * Protocol step 4 for `complete`: the state change Airflow's ti_update_state makes on success,
 * the only statement run under the row lock before COMMIT: state, end_date (given, or the clock
 * now), start_date when it was never set, duration computed in SQL from start_date, next_method and next_kwargs cleared, updated_at.
 */
export async function markTaskInstanceSuccess(conn: DriverConnection, tiId: string, endDate: Date | null): Promise<void> {
  await prepared(
    conn,
    `update task_instance ti
        set state = 'success', end_date = stamp.end_date,
            -- A task instance that never started gets start_date = end_date, as Airflow's set_state does.
            start_date = coalesce(ti.start_date, stamp.end_date),
            duration = extract(epoch from (stamp.end_date - coalesce(ti.start_date, stamp.end_date))),
            next_method = null, next_kwargs = null, updated_at = clock_timestamp()
       from (select coalesce($1::timestamptz, clock_timestamp()) as end_date) as stamp
      where ti.id = $2::uuid`,
    [endDate, tiId],
  )
}
