import type {TaskInstanceRef} from '../airflow/taskInstance.js'

/** One `outlet_events` entry of an input line: the extra for an outlet, or an event through an alias. */
export interface OutletEventInput {
  /**
   * The asset: its name or uri (for an alias emission, only when that matches exactly one existing
   * asset), or `{name, uri}` (an alias emission's target, created if it does not exist).
   */
  asset: string | {name: string; uri: string; extra?: Record<string, unknown>}
  extra?: Record<string, unknown>
  /** Emit through this asset alias (the asset is created if missing, as Airflow does). */
  alias?: string
  /**
   * Partition keys the task chose for this asset's events (Airflow 3.3+ `add_partitions`): one
   * event per key, each with this entry's extra; absent: the run's partition key.
   */
  partitionKeys?: string[]
}

export interface WorkItem {
  ref: TaskInstanceRef
  outletEvents: OutletEventInput[]
}
