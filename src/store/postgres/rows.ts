import type {TaskInstanceKey} from '../../airflow/taskInstance.js'

/**
 * A task instance's key as PostgreSQL returns Airflow's columns: the one place its snake_case
 * names become the domain's camelCase, for every statement that selects them.
 */
export interface TaskInstanceKeyRow {
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
}

/** The key with the task instance's id (`id` selected as text or uuid: node-postgres returns both as text). */
export interface KeyedTaskInstanceRow extends TaskInstanceKeyRow {
  id: string
}

export const taskInstanceKeyOf = (row: TaskInstanceKeyRow): TaskInstanceKey => ({
  dagId: row.dag_id,
  runId: row.run_id,
  taskId: row.task_id,
  mapIndex: row.map_index,
})

export const keyedTaskInstanceOf = (row: KeyedTaskInstanceRow): TaskInstanceKey & {id: string} => ({
  id: row.id,
  ...taskInstanceKeyOf(row),
})
