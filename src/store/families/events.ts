import type {EventLineParts} from '../../airflow/eventLine.js'
import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import type {EventFilter} from '../types.js'

/**
 * Stored events read and written again (postgres/events.ts): export's pages, replay's copies and
 * their attribution, the duplicate repair.
 */
export interface EventStore {
  /** One keyset page of events with everything an export line carries. */
  readEventLinePage(ex: Executor, filter: EventPageFilter): Promise<EventLineParts[]>
  readEventsById(ex: Executor, ids: readonly number[]): Promise<StoredEvent[]>
  resolveAssetsAndAliases(
    ex: Executor,
    assets: ReadonlyArray<{name: string; uri: string}>,
    aliasNames: readonly string[],
  ): Promise<{assetIds: Map<string, number>; aliasIds: Map<string, number>}>
  /** For a replay that skips what exists: an event with the same content at or after `since` (atomic per content). */
  findMatchingEvent(ex: Executor, content: EventContent, since: Date): Promise<number | undefined>
  /** A new event with the given content and a fresh timestamp. */
  insertEventCopy(ex: Executor, content: EventContent): Promise<number>
  /**
   * The try of `source` an event belongs to (the audit's attribution: the audit row naming
   * `eventId`, then the tries' spans against `timestamp`); null when the evidence cannot tell or
   * the key has no try here. What a re-emitted copy's audit row names.
   */
  readEventTry(ex: Executor, source: TaskInstanceKey, eventId: number | null, timestamp: Date): Promise<number | null>
  /** How many of these event ids exist. */
  countEvents(ex: Executor, ids: readonly number[]): Promise<number>
  /** Lock, recheck consumption, delete the unconsumed ones. */
  removeDuplicateEvents(ex: Executor, keptId: number, extraIds: readonly number[]): Promise<RemovedDuplicates>
}

export interface EventPageFilter extends EventFilter {
  afterId: number
  limit: number
}

export interface EventContent {
  assetId: number
  /** JSON text. */
  extra: string
  source: TaskInstanceKey | null
  partitionKey: string | null
}

export interface StoredEvent extends EventContent {
  id: number
  assetName: string
  assetUri: string
  timestamp: Date
  aliasIds: number[]
  /** For the audit row: the source run's logical date and the source DAG's owners. */
  logicalDate: Date | null
  owners: string | null
}

/** Why a pending duplicate was left (RemovedDuplicates.pending). */
export type PendingReason = 'partitioned_consumer' | 'queued'

/** What one duplicate group's repair did. */
export interface RemovedDuplicates {
  removed: number[]
  /**
   * Each removed event's row as it was, every column of `asset_event` (whatever the release
   * adds, partition_key included) and its alias links (`alias_ids`): what restores it.
   */
  removedRows: Array<Record<string, unknown>>
  consumed: number[]
  /**
   * Not consumed, but a run could still take them where airlock's DAG lock does not reach: left.
   * `partitioned_consumer`: a consumer has a partitioned timetable, whose partition path airlock
   * does not lock; `queued` (3.4): a queue row names them, and a scheduler may have read that id
   * before taking the DAG lock (docs/audit-events.md).
   */
  pending: number[]
  pendingReason: PendingReason | null
  /** Locked by another session (a scheduler consuming them or working on a consumer DAG, another fixer): left, not waited on. */
  busy: number[]
  /** No longer the kept event's duplicates, or the kept event is gone: left, the audit's read no longer holds. */
  changed: number[]
  /** Named by complete's audit row of their try: that try's events, never removed. */
  named: number[]
}
