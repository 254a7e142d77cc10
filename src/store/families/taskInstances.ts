import type {StoredState, TaskInstanceContext, TaskInstanceKey, TaskInstanceRef} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'

/**
 * The task-instance protocol's own reads and writes of `task_instance` (postgres/taskInstance.ts):
 * read without a lock, lock by id, the success write, and who holds a row lock.
 */
export interface TaskInstanceStore {
  /** Step 1: the task instance with its run, DAG and (optionally) declared outlets, WITHOUT a lock. */
  readTaskInstance(
    ex: Executor,
    ref: TaskInstanceRef,
    options: {withOutlets: boolean},
  ): Promise<TaskInstanceContext | undefined>
  /**
   * The key of a task instance id that is no longer current: Airflow 3 gives every try a new id
   * and keeps the old one in task_instance_history.
   */
  readArchivedTaskInstanceKey(ex: Executor, tiId: string): Promise<TaskInstanceKey | undefined>
  /** Step 3: SELECT … FOR UPDATE by id only; the state is read under the lock. */
  lockTaskInstance(ex: Executor, tiId: string): Promise<LockedTaskInstance | undefined>
  /** The session holding the task instance's row lock, best effort (for a lock-timeout message). */
  readRowHolder(ex: Executor, tiId: string): Promise<RowHolder | undefined>
  /** Step 4 of complete: the state change Airflow's success path makes. */
  markTaskInstanceSuccess(ex: Executor, tiId: string, endDate: Date | null): Promise<void>
  /**
   * Deletes the task state store's keys of this task instance, as a success does when Airflow's
   * `[state_store] clear_on_success` is on (3.3+); how many were deleted. Call only when the
   * capability says so.
   */
  clearTaskState(ex: Executor, ti: TaskInstanceContext): Promise<number>
}

export interface LockedTaskInstance {
  state: StoredState
  tryNumber: number | null
  /** The transaction id of the locked row version (xmin): any write to the row since changes it. */
  xmin: string
}

/** A session holding a row lock, as pg_stat_activity describes it. */
export interface RowHolder {
  pid: number
  applicationName: string
  since: Date | null
  state: string | null
  user: string
}
