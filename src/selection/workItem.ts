import type {TaskInstanceRef} from '../airflow/taskInstance.js'

/** One `outlet_events` entry of an input line: the extra for an outlet, or an event through an alias. */
export interface OutletEventInput {
  /** The asset's name or uri. */
  asset: string
  extra?: Record<string, unknown>
  /** Emit through this asset alias (the asset is created if missing, as Airflow does). */
  alias?: string
}

export interface WorkItem {
  ref: TaskInstanceRef
  outletEvents: OutletEventInput[]
}
