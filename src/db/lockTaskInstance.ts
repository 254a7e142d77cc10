import type {Knex} from 'knex'

import type {StoredState} from '../airflow/taskInstance.js'

/**
 * Protocol step 3: lock the task_instance row and read its state under the lock.
 *
 * The WHERE clause names the row by id only. Filtering on state here ("… and state = 'running'")
 * would turn a row that changed state into a missing row, and the caller could no longer tell
 * `conflict` from `not_found` (DESIGN §1).
 */
export async function lockTaskInstance(trx: Knex.Transaction, tiId: string): Promise<{state: StoredState} | undefined> {
  const {rows} = await trx.raw<{rows: Array<{state: string | null}>}>('select state from task_instance where id = ? for update', [tiId])
  const row = rows[0]
  return row ? {state: row.state as StoredState} : undefined
}
