import type {Executor} from '../../engine/engine.js'

/** `airlock undo`: the audit rows airlock wrote, taken back (postgres/undo.ts). */
export interface UndoStore {
  /** Audit `log` rows by id, in id order. */
  readAuditRecords(ex: Executor, ids: readonly number[]): Promise<AuditRecord[]>
  /** The audit rows airlock's writers left in a window, in id order. */
  readAuditRecordWindow(ex: Executor, window: AuditRecordWindow): Promise<AuditRecord[]>
  /** The committed undo row that took back this audit row, if any. */
  findUndoOf(ex: Executor, logId: number, exceptId?: number): Promise<number | undefined>
  /** The dag rows of the events' consumer DAGs, FOR SHARE SKIP LOCKED: how many are wanted and how many were locked. */
  lockEventConsumers(ex: Executor, eventIds: readonly number[], options?: {lock: boolean}): Promise<EventConsumerLocks>
  /** The runs (or, 3.2+, partition log rows) that consumed any of these events. */
  readConsumingRuns(ex: Executor, eventIds: readonly number[]): Promise<ConsumingRun[]>
  /** Deletes these events (alias links and 3.4+ queue rows cascade); the ids deleted. */
  deleteEvents(ex: Executor, eventIds: readonly number[]): Promise<Array<{id: number; assetId: number}>>
  /** Before 3.4: the queue rows a write created, deleted unless another pending event still needs them. */
  deleteCreatedQueueRows(
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    undoneEventIds: readonly number[],
  ): Promise<{deleted: Array<{dagId: string; assetId: number}>; kept: Array<{dagId: string; assetId: number}>}>
  /**
   * What taking back these events does to the queue, on reads alone (before 3.4 the rows
   * deleteCreatedQueueRows deletes and keeps; from 3.4 the keys left with no row), and the aliases
   * each DAG's queue no longer reaches.
   */
  readUndoQueueEffect(
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    undoneEventIds: readonly number[],
  ): Promise<UndoQueueEffect>
  /** The queue rows a write's events still hold (its created rows before 3.4, the rows naming them from 3.4), as JSON rows. */
  readWriteQueueRows(
    ex: Executor,
    of: {assetIds: readonly number[]; logId: number},
    eventIds: readonly number[],
  ): Promise<QueueImageRow[]>
  /** 3.4: the queue rows naming these events, deleted; the keys. */
  deleteEventQueueRows(ex: Executor, eventIds: readonly number[]): Promise<Array<{dagId: string; assetId: number}>>
  /** Why withdrawn queue rows cannot be put back (none: they can), one phrase per row. */
  readQueueRowsUnrestorable(
    ex: Executor,
    rows: readonly QueueImageRow[],
    eventIds: readonly number[],
  ): Promise<string[]>
  /** Withdrawn queue rows put back from their before-image; the keys written. */
  restoreQueueRows(ex: Executor, rows: readonly QueueImageRow[]): Promise<Array<{dagId: string; assetId: number}>>
  /** Under the row lock: which columns differ from what airlock's write left. */
  compareTaskInstanceLeft(
    ex: Executor,
    tiId: string,
    logId: number,
  ): Promise<{same: boolean; state: string | null; tryNumber: number | null} | undefined>
  /** Since a completion: its run's task instances (of taskIds; null: all) that changed after it, and the run if it finished since. */
  readMovedSince(
    ex: Executor,
    of: {dagId: string; runId: string; tiId: string; taskIds: readonly string[] | null; except: readonly string[]},
  ): Promise<string[]>
  /** The task instance's columns back as the before-image recorded them. */
  restoreTaskInstance(ex: Executor, tiId: string, before: unknown): Promise<boolean>
  /** Under undo: continue-run's cleared task instances and run locked, and what moved on since the clear. */
  lockAndCompareClear(
    ex: Executor,
    left: {taskInstances: readonly unknown[]; dagRun: unknown},
    options?: {lock: boolean},
  ): Promise<string[]>
  /** continue-run's clear taken back from its before-image. */
  restoreClear(ex: Executor, image: ClearImage): Promise<void>
  /** Events removed by the duplicate repair, put back whole (their extra from the kept event); the ids restored. */
  restoreEvents(ex: Executor, rows: readonly unknown[], keptEventId: number): Promise<number[]>
}

/** A queue row as a withdrawal's before-image records it (`event_id` from 3.4, one row per event). */
export interface QueueImageRow {
  dag_id: string
  asset_id: number
  created_at: string
  event_id?: number
}

/** log.event of the audit row of `undo --withdraw-queued` (varchar(60) in Airflow). */
export const withdrawLogEvent = 'airlock.undo.withdraw-queued'

/** log.event of an undo's own audit row (varchar(60) in Airflow): what findUndoOf looks for. */
export const undoLogEvent = 'airlock.undo'

/** One row of Airflow's audit `log`, as airlock undo reads it (extra as its text). */
export interface AuditRecord {
  id: number
  at: Date | null
  logicalDate: Date | null
  event: string | null
  dagId: string | null
  runId: string | null
  taskId: string | null
  mapIndex: number | null
  tryNumber: number | null
  owner: string | null
  extra: string | null
}

/** Which audit rows an undo selects by time (`log.dttm`), who acted, and where. */
export interface AuditRecordWindow {
  since: Date
  until: Date
  events: readonly string[]
  owner?: string | undefined
  dagIds: readonly string[]
  runIds: readonly string[]
  taskIds: readonly string[]
  limit?: number | undefined
}

/** continue-run's clear as its audit row recorded it (JSON rows, timestamps as recorded). */
export interface ClearImage {
  taskInstances: readonly unknown[]
  reschedules: readonly unknown[]
  dagRun: unknown
  left: {taskInstances: readonly unknown[]; dagRun: unknown}
}

export interface EventConsumerLocks {
  wanted: number
  locked: number
  /** Consumer DAGs with a partitioned timetable (3.2+): their partition path takes events without the DAG lock. */
  partitioned: string[]
  /** The events' assets and aliases (what the downstream preview reads before they go). */
  assetIds: number[]
  aliasIds: number[]
}

/** The queue keys an undo takes away and keeps, and the aliases a DAG's queue no longer reaches. */
export interface UndoQueueEffect {
  deleted: Array<{dagId: string; assetId: number}>
  kept: Array<{dagId: string; assetId: number}>
  lostAliases: Array<{dagId: string; alias: string}>
}

/** A run that consumed an event; runId null for a 3.2+ partition log row (no run yet). */
export interface ConsumingRun {
  eventId: number
  dagId: string
  runId: string | null
}
