import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {DeclaredAllowance} from '../../airflow/declaredEvents.js'
import type {AttributionBasis} from '../../airflow/tryAttribution.js'
import type {Executor} from '../../engine/engine.js'
import type {EventFilter} from '../types.js'

/** Airflow's audit `log` (postgres/auditLog.ts): a row written, and whether it landed after a lost COMMIT. */
export interface AuditLogStore {
  /** A row of Airflow's audit `log`. */
  insertLogRow(ex: Executor, subject: LogSubject, event: string, extra: string): Promise<{logId: number}>
  /** How a writer learns, after a lost COMMIT, whether its transaction landed. */
  logRowExists(ex: Executor, logId: number): Promise<boolean>
}

/** audit-events' reads (postgres/eventAudit.ts): every sourced event classified, and the queue's orphans. */
export interface EventAuditStore {
  /** Filtered events with a source task instance, and without (external). */
  countEventSources(ex: Executor, filter: EventFilter): Promise<{sourced: number; external: number}>
  /** Every sourced filtered event with its class, `batch` at a time through a cursor: inside a transaction. */
  streamClassifiedEvents(
    tx: Executor,
    filter: EventFilter,
    windowSeconds: number,
    batch: number,
  ): AsyncGenerator<ClassifiedEvent[]>
  readQueueOrphans(ex: Executor, limit?: number): Promise<QueueOrphan[]>
}

/** What a `log` row is about: a task instance, or (for events without a source task) nothing. */
export interface LogSubject {
  dagId: string | null
  taskId: string | null
  runId: string | null
  mapIndex: number | null
  tryNumber: number | null
  logicalDate: Date | null
  owners: string | null
}

/** A log row about nothing in particular (a repair across task instances). */
export const noLogSubject: LogSubject = {
  dagId: null,
  taskId: null,
  runId: null,
  mapIndex: null,
  tryNumber: null,
  logicalDate: null,
  owners: null,
}

export type EventClass =
  | 'ok'
  | 'external'
  | 'orphan_missing_ti'
  | 'orphan_not_success'
  | 'superseded_by_rerun'
  | 'duplicate'
  | 'duplicate_unknown'
  | 'unattributed'

export interface ClassifiedEvent {
  id: number
  assetId: number
  assetName: string
  /** As stored: source_map_index is nullable (NULL is grouped with -1 but reported as it is). */
  source: Omit<TaskInstanceKey, 'mapIndex'> & {mapIndex: number | null}
  timestamp: Date
  class: EventClass
  /** duplicate: the event kept for the group (the one an audit row names, else the first). */
  keptId: number | null
  consumed: boolean
  /**
   * The try the event belongs to and on what evidence (store/postgres/attribution.ts); for an
   * unattributed event, no try and the latest one it may belong to. Null for orphan_missing_ti.
   */
  attribution: {
    tryNumber: number | null
    candidate: number | null
    basis: AttributionBasis | null
    successTry: number | null
  }
  /**
   * duplicate, duplicate_unknown: how many events of this content the try's declared outlets call
   * for on the asset (one per declaration: the asset, Asset.ref by name, by uri), or why the
   * serialized DAG cannot tell.
   */
  declared?: DeclaredAllowance
}

export interface QueueOrphan {
  kind: 'queue_missing_asset' | 'queue_missing_dag' | 'queue_missing_event' | 'alias_link_missing_event'
  detail: string
}
