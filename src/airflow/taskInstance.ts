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
/**
 * A task instance named by id or by key. An id may carry the key its selection saw (`seen`), so
 * an item that fails before its own read is still named by its key in every report.
 */
export type TaskInstanceRef = {tiId: string; seen?: TaskInstanceKey} | {key: TaskInstanceKey}

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
  /**
   * The task's declared outlets, in declaration order, when the writer asked for them: from the
   * serialized DAG of the task instance's own DAG version, or (when there is none) from
   * task_outlet_asset_reference, which lists only the concrete assets of the latest parse.
   */
  outlets: OutletAsset[]
  /** Where `outlets` came from. */
  outletsFrom: 'serialized_dag' | 'task_outlet_asset_reference'
  /** Asset aliases declared as outlets of the task (serialized DAG only). */
  declaredAliases: string[]
  /**
   * Mapped tasks directly downstream (serialized DAG only, read with the outlets): a worker's
   * success writes the task_map row they expand over, which airlock cannot.
   */
  mappedDependants: string[]
  dagVersionId: string | null
}

export interface OutletAsset {
  /** How the task declared it: the asset itself, or `Asset.ref(name=…)` / `Asset.ref(uri=…)`. */
  kind: 'asset' | 'name_ref' | 'uri_ref'
  /** The asset it resolves to; null when no asset row matches (then it is not active either). */
  assetId: number | null
  /** The asset's name and uri; for an unresolved reference, what the reference names ('' for the other). */
  name: string
  uri: string
  /** Resolved to an asset with a row in asset_active: only those get events, as in Airflow. */
  active: boolean
}

/** The outlets that get an event: resolved to an active asset (one event each, refs included). */
export function activeOutlets(ti: Pick<TaskInstanceContext, 'outlets'>): Array<OutletAsset & {assetId: number}> {
  return ti.outlets.filter((o): o is OutletAsset & {assetId: number} => o.active && o.assetId !== null)
}

/** An outlet as an operator reads it: `name (uri)`, or the reference as declared. */
export function describeOutlet(outlet: OutletAsset): string {
  if (outlet.assetId === null && outlet.kind === 'name_ref') return `Asset.ref(name=${outlet.name})`
  if (outlet.assetId === null && outlet.kind === 'uri_ref') return `Asset.ref(uri=${outlet.uri})`
  return `${outlet.name} (${outlet.uri})`
}

/** task_instance.id: a UUID. */
export const taskInstanceIdPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

export function describeRef(ref: TaskInstanceRef): string {
  return 'tiId' in ref ? ref.tiId : formatKey(ref.key)
}

export function formatKey(key: TaskInstanceKey): string {
  return `${key.dagId}/${key.runId}/${key.taskId}${key.mapIndex >= 0 ? `[${key.mapIndex}]` : ''}`
}
