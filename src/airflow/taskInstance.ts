/**
 * Domain types for task instances, converted once from Airflow's snake_case rows in the store.
 */
export const taskInstanceStates = [
  'running',
  'success',
  'failed',
  'up_for_retry',
  'up_for_reschedule',
  'upstream_failed',
  'skipped',
  'removed',
  'scheduled',
  'queued',
  'deferred',
  'restarting',
] as const

export type TaskInstanceState = (typeof taskInstanceStates)[number]

/** A state as stored: one of Airflow's, or NULL (a TI that was never scheduled). */
export type StoredState = TaskInstanceState | null

export interface TaskInstanceKey {
  dagId: string
  runId: string
  taskId: string
  mapIndex: number
}

/** How an input names a task instance: by id, or by its natural key. */
export type TaskInstanceRef = {tiId: string} | {key: TaskInstanceKey}

/** What the unlocked read (protocol step 1) learns about a task instance and its run and DAG. */
export interface TaskInstanceContext extends TaskInstanceKey {
  id: string
  state: StoredState
  tryNumber: number | null
  startDate: Date | null
  endDate: Date | null
  dagRunId: number
  logicalDate: Date | null
  /** dag_run.partition_key (Airflow 3.2+), null when absent or unset. */
  partitionKey: string | null
  owners: string | null
  /** The task's declared outlets (task_outlet_asset_reference), when the writer asked for them. */
  outlets: OutletAsset[]
}

export interface OutletAsset {
  assetId: number
  name: string
  uri: string
  /** A row in asset_active with the same name and uri: only active assets get events. */
  active: boolean
}

/** task_instance.id: a UUID. */
export const taskInstanceIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function describeRef(ref: TaskInstanceRef): string {
  return 'tiId' in ref ? ref.tiId : formatKey(ref.key)
}

export function formatKey(key: TaskInstanceKey): string {
  return `${key.dagId}/${key.runId}/${key.taskId}${key.mapIndex >= 0 ? `[${key.mapIndex}]` : ''}`
}
