import type {StoredState} from '../airflow/taskInstance.js'
import {prepared, type DriverConnection} from './driverConnection.js'

export interface LockedTaskInstance {
  state: StoredState
  tryNumber: number | null
}

/**
 * Protocol step 3: lock the task_instance row and read its state under the lock.
 *
 * The WHERE clause names the row by id only. Filtering on state here ("… and state = 'running'")
 * would turn a row that changed state into a missing row, and the caller could no longer tell
 * `conflict` from `not_found` (DESIGN §1).
 */
export async function lockTaskInstance(conn: DriverConnection, tiId: string): Promise<LockedTaskInstance | undefined> {
  const rows = await prepared<{state: string | null; try_number: number | null}>(conn, 'select state, try_number from task_instance where id = $1 for update', [tiId])
  const row = rows[0]
  return row ? {state: row.state as StoredState, tryNumber: row.try_number} : undefined
}
