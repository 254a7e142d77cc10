import type {TaskInstanceKey} from '../../airflow/taskInstance.js'
import type {Executor} from '../../engine/engine.js'
import type {DownstreamFacts} from './downstream.js'

/**
 * What a task instance's events write (postgres/registration.ts): the events with their audit row,
 * alias assets and links, and the consumers queued (or planned) as the scheduler would queue them.
 */
export interface RegistrationStore {
  /** A task instance's events (one multi-row INSERT) and the audit row naming them, in one statement. */
  insertAssetEvents(
    ex: Executor,
    source: TaskInstanceKey,
    events: readonly NewAssetEvent[],
    audit: AuditRow,
  ): Promise<{events: InsertedEvent[]; logId: number; imageXmin: string | null}>
  /** Existing assets whose name or uri is one of these strings, by string (an alias target named by one string). */
  findAssetsByNameOrUri(
    ex: Executor,
    strings: readonly string[],
  ): Promise<Map<string, Array<{name: string; uri: string}>>>
  /** Assets named by alias emissions, created when missing and linked to their alias. */
  ensureAliasAssets(
    ex: Executor,
    emissions: readonly AliasEmission[],
    createAliasesNamed: readonly string[],
  ): Promise<ResolvedAliasEmission[]>
  insertAliasEventLinks(ex: Executor, links: ReadonlyArray<{aliasId: number; eventId: number}>): Promise<void>
  /**
   * The consumers of the events, queued in key order; partition-aware ones reported, not queued.
   * With `preview`, the same statement reads the downstream preview of those assets and aliases
   * (as readDownstream does), its own queue rows included.
   */
  queueConsumers: QueueConsumers
  /**
   * queueConsumers on SELECT alone, for a read-only plan: the same statement's decision, the keys it would
   * queue selected instead of inserted (no event exists yet: `events` carry stand-in ids).
   */
  planConsumers: QueueConsumers
}

export interface NewAssetEvent {
  assetId: number
  /** JSON text of the event's extra ({} when none): one JSON value, as JSON.stringify writes it. */
  extra: string
  /** asset_event.partition_key (3.2+; ignored before): the run's, or one the task chose (3.3+). */
  partitionKey: string | null
}

/**
 * The audit `log` row written in the statement that inserts the events it names, about their
 * source task instance: its extra is JSON text with room left for the events' ids (an array).
 */
export interface AuditRow {
  event: string
  tryNumber: number | null
  logicalDate: Date | null
  owner: string | null
  extra: {before: string; after: string}
  /**
   * complete's before-image, read by the same statement: the task instance `tiId` as it reads it,
   * with `fields` (what the writer knows itself), in place of `standIn` in the extra.
   */
  image?: {tiId: string; standIn: string; fields: Record<string, unknown>}
}

export interface InsertedEvent {
  eventId: number
  assetId: number
  partitionKey: string | null
}

export interface AliasEmission {
  aliasName: string
  assetName: string
  assetUri: string
  /** The target asset's own extra as the task declared it (JSON text): a created asset gets it from 3.1.5. */
  assetExtra: string
}

export interface ResolvedAliasEmission extends Omit<AliasEmission, 'assetExtra'> {
  aliasId: number
  assetId: number
}

export interface RegisteredEvent {
  eventId: number
  assetId: number
  /** The alias the event was emitted through, if any: its consumers are queued too. */
  aliasId: number | null
}

/**
 * What became of one consumer DAG of one event. `queued`: a queue row written (or already there).
 * `partition_mapper`: a DAG with a partitioned timetable, fed an event with a partition key: Airflow
 * queues it through its partition mapper, which only runs inside Airflow. `not_queued_by_airflow`:
 * the release queues nothing for it either (an event with a partition key and a consumer without a
 * partitioned timetable, or a partitioned consumer and an event without a key).
 */
export interface ConsumerDecision {
  kind: 'queued' | 'partition_mapper' | 'not_queued_by_airflow'
  assetId: number
  dagId: string
  /** For a DAG not queued: the alias it is scheduled on that the event went through (null: by the asset). */
  aliasId: number | null
}

/** The queue statement's call, writing (queueConsumers) or planning (planConsumers). */
export type QueueConsumers = (
  ex: Executor,
  events: readonly RegisteredEvent[],
  eventPartitionKey: string | null,
  producer: {dagId: string; taskId: string} | null,
  preview: {assetIds: readonly number[]; aliasIds: readonly number[]} | null,
) => Promise<QueuedConsumers>

/** What queueConsumers decided per consumer, and the downstream preview when it was asked for one. */
export interface QueuedConsumers {
  decisions: ConsumerDecision[]
  downstream: DownstreamFacts[] | null
}
