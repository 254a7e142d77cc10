import type {QueuedAssets} from '../airflow/assetCondition.js'
import type {EventLineParts} from '../airflow/eventLine.js'
import type {Capabilities, PrimaryKeys, SchemaShape} from '../airflow/schema.js'
import type {StoredState, TaskInstanceContext, TaskInstanceKey, TaskInstanceRef} from '../airflow/taskInstance.js'
import type {AttributionBasis} from '../airflow/tryAttribution.js'
import type {TryEvidence, TryEvidenceKind} from '../airflow/tryEvidence.js'
import type {Executor} from '../engine/engine.js'

/**
 * The port in front of an Airflow metadata database: one method per thing airlock reads or
 * writes, each taking the executor it runs on (the pool, or a transaction) and returning domain
 * rows. A store is built once per engine and capability set when the database is opened, so the
 * Airflow-version differences (partition keys, the queue's key, …) are settled there and no
 * caller passes a version flag. Every SQL statement of the product lives behind this interface.
 */
export interface AirflowStore extends CatalogStore {
  /**
   * What the database's release does, for the registration rules that decide which rows to write
   * (partition keys per event, the missing-key log row); the SQL itself is chosen here, once.
   */
  readonly capabilities: Capabilities
  // --- the task-instance protocol -------------------------------------------------------------
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
   * queueConsumers on SELECT alone, for `--plan`: the same statement's decision, the keys it would
   * queue selected instead of inserted (no event exists yet: `events` carry stand-in ids).
   */
  planConsumers: QueueConsumers
  /**
   * Deletes the task state store's keys of this task instance, as a success does when Airflow's
   * `[state_store] clear_on_success` is on (3.3+); how many were deleted. Call only when the
   * capability says so.
   */
  clearTaskState(ex: Executor, ti: TaskInstanceContext): Promise<number>
  /**
   * Every consumer DAG these events' assets and aliases reach, with what the scheduler reads to
   * decide whether it creates a run (one statement; a write reads it with queueConsumers).
   */
  readDownstream(ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]>
  /** `explain`: the next page of DAG ids (by id, after `after`) the selection names. */
  pageExplainDags(ex: Executor, selection: ExplainSelection, after: string, limit: number): Promise<string[]>
  /**
   * `explain`: what the scheduler reads about these DAGs (flags, runs against the cap, latest
   * condition, queue rows and the events that queued them), the assets and aliases their
   * conditions name with their last events, their last `runsPerDag` asset-triggered runs with the
   * events each consumed, and (3.2+) their pending partition runs. A bounded number of statements
   * whatever the page's size.
   */
  readExplainPage(ex: Executor, dagIds: readonly string[], runsPerDag: number): Promise<ExplainPage>
  /** After a commit: what the task instance's OpenLineage COMPLETE event is built from. */
  readLineageFacts(ex: Executor, tiId: string): Promise<LineageRow | undefined>
  /** The task instances whose current try airlock completed in the window (its own `success` audit row), still success. */
  readAirlockCompletions(
    ex: Executor,
    window: {since: Date; until: Date; dagId?: string | undefined},
  ): Promise<string[]>
  // --- undo ----------------------------------------------------------------------------------
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
  /** Events removed by audit-events --fix, put back whole (their extra from the kept event); the ids restored. */
  restoreEvents(ex: Executor, rows: readonly unknown[], keptEventId: number): Promise<number[]>
  /** A row of Airflow's audit `log`. */
  insertLogRow(ex: Executor, subject: LogSubject, event: string, extra: string): Promise<{logId: number}>
  /** How a writer learns, after a lost COMMIT, whether its transaction landed. */
  logRowExists(ex: Executor, logId: number): Promise<boolean>
  /**
   * Which of the given assets have no event of this task instance's try, and the strongest
   * evidence of how the try came to be success (lost events, or marked success without them).
   * `ignore`: the events and log row the calling transaction wrote itself (a recheck).
   */
  readMissingOutlets(
    ex: Executor,
    ti: TaskInstanceContext,
    assetIds: readonly number[],
    ignore?: {eventIds: readonly number[]; logId: number | null},
  ): Promise<MissingOutlets>

  // --- complete --continue-run: Airflow's clear of the failed downstream ------------------------
  /** The DAG's newest serialized DAG (parsed JSON), from which Airflow's REST handler takes the downstream set. */
  readLatestSerializedDag(ex: Executor, dagId: string): Promise<unknown>
  readVersionSerializedDag(ex: Executor, dagVersionId: string): Promise<unknown>
  /** The task instance's run; `lock` takes its row (FOR UPDATE). */
  readClearRun(ex: Executor, dagRunId: number, options: {lock: boolean}): Promise<ClearRun | undefined>
  /** The run's failed / upstream_failed task instances of these tasks (null: every task), the marked task excluded; `lock` takes them in key order. */
  readClearTargets(
    ex: Executor,
    ti: TaskInstanceContext,
    taskIds: readonly string[] | null,
    options: {lock: boolean},
  ): Promise<ClearTarget[]>
  /** Which of these task instances have a human-in-the-loop record (hitl_detail). */
  readHitlTaskInstances(ex: Executor, tiIds: readonly string[]): Promise<string[]>
  /** Archive, delete reschedules, new id and state NULL, as `clear_task_instances`. */
  clearTaskInstances(
    ex: Executor,
    targets: ReadonlyArray<{id: string; retries: number | null}>,
  ): Promise<ClearedTaskInstance[]>
  /** A finished run back to queued; an active one's queued_at and clear_number moved when `touchActive` (3.2+); false when nothing changed. */
  requeueDagRun(ex: Executor, dagRunId: number, options: {touchActive: boolean}): Promise<boolean>
  /** Under the clear's locks, before it: the rows it will change, as JSON text (undo's before-image). */
  readClearImage(ex: Executor, tiIds: readonly string[], dagRunId: number): Promise<string>
  /** After the clear: its before-image and what it left into the completion's audit row. */
  recordClearImage(
    ex: Executor,
    logId: number,
    standIn: string,
    image: string | null,
    newIds: readonly string[],
    dagRunId: number,
  ): Promise<void>
  /** How many deadline alerts the run has (refused from 3.2, whose clear re-anchors them). */
  countRunDeadlines(ex: Executor, dagRunId: number): Promise<number>

  // --- selection ------------------------------------------------------------------------------
  /** One keyset page of the selection's task instances (id > after, ORDER BY id), with their run and state. */
  selectTaskInstancePage(
    ex: Executor,
    filter: TaskInstanceFilter,
    after: string | undefined,
    limit: number,
  ): Promise<SelectedTaskInstance[]>
  /** One keyset page of the runs of a run_after range, in (run_after, id) order. */
  selectRunPage(
    ex: Executor,
    filter: TaskInstanceFilter,
    after: {runAfter: Date; id: number} | undefined,
    limit: number,
  ): Promise<Array<{id: number; dagId: string; runId: string; runAfter: Date}>>
  /** One keyset page of the task instances of those runs, in (their order, id) order; `n` is the run's place in the page (1-based). */
  selectTaskInstanceIdsOfRuns(
    ex: Executor,
    filter: TaskInstanceFilter,
    runs: ReadonlyArray<{dagId: string; runId: string}>,
    after: {n: number; id: string} | undefined,
    limit: number,
  ): Promise<Array<{n: number; id: string; key: TaskInstanceKey}>>
  countTaskInstances(ex: Executor, filter: TaskInstanceFilter): Promise<number>
  /** The selection grouped by DAG, run and state (at most `maxGroups` groups, in key order). */
  summarizeTaskInstances(
    ex: Executor,
    filter: TaskInstanceFilter & {limit?: number | undefined},
    maxGroups: number,
  ): Promise<SelectionGroup[]>
  /** Whether any event names this DAG as its source (a DAG deleted since keeps its events). */
  hasEventsFromDag(ex: Executor, dagId: string): Promise<boolean>
  /** Every dag_id of the dag table (for "did you mean"). */
  readDagIds(ex: Executor): Promise<string[]>
  /** The named --run-id / --task-id values no task instance or run of the DAG carries. */
  readUnknownSelectors(
    ex: Executor,
    dagId: string | undefined,
    named: {runIds: readonly string[]; taskIds: readonly string[]},
  ): Promise<UnknownSelectors>

  // --- events: export, replay, repair ---------------------------------------------------------
  /** One keyset page of events with everything an export line carries. */
  readEventLinePage(ex: Executor, filter: EventPageFilter): Promise<EventLineParts[]>
  readEventsById(ex: Executor, ids: readonly number[]): Promise<StoredEvent[]>
  resolveAssetsAndAliases(
    ex: Executor,
    assets: ReadonlyArray<{name: string; uri: string}>,
    aliasNames: readonly string[],
  ): Promise<{assetIds: Map<string, number>; aliasIds: Map<string, number>}>
  /** --skip-existing: an event with the same content at or after `since` (atomic per content). */
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

  // --- audit-events ---------------------------------------------------------------------------
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

/** What airlock reads before it knows the Airflow version: the catalog, the server, its sessions. */
export interface CatalogStore {
  /** The alembic head(s), or undefined when there is no alembic_version table (not Airflow). */
  readAlembicHeads(ex: Executor): Promise<string[] | undefined>
  readSchemaShape(ex: Executor, tables: readonly string[]): Promise<SchemaShape>
  /** Each named public table's primary key columns, in key order. */
  readPrimaryKeys(ex: Executor, tables: readonly string[]): Promise<PrimaryKeys>
  readServerInfo(ex: Executor): Promise<ServerInfo>
  readTablePrivileges(ex: Executor, checks: readonly PrivilegeCheck[]): Promise<PrivilegeResult[]>
  readSettings(ex: Executor, names: readonly string[]): Promise<ServerSetting[]>
  readDeadlockCount(ex: Executor): Promise<number>
  /** `server` says what the server can report (the wait start exists from PostgreSQL 14). */
  readLockSnapshot(ex: Executor, server: Pick<ServerInfo, 'versionNum'>): Promise<SessionRow[]>
  findTaskInstanceByTuple(
    ex: Executor,
    page: number,
    tuple: number,
  ): Promise<(TaskInstanceKey & {id: string}) | undefined>
  findTaskInstancesById(ex: Executor, ids: readonly string[]): Promise<Array<TaskInstanceKey & {id: string}>>
  /** Whether pgrowlocks can be called here (installed in this database, on the search path). */
  readRowLockSupport(ex: Executor): Promise<boolean>
  /**
   * The task_instance rows that transactions `xids` hold row locks on, from pgrowlocks, which
   * reads the whole table: call it once per report, with a statement timeout.
   */
  readTaskInstanceRowLocks(ex: Executor, xids: readonly string[]): Promise<TaskInstanceRowLock[]>
}

/** A task_instance row that some transactions hold a row lock on, as pgrowlocks reports it. */
export interface TaskInstanceRowLock extends TaskInstanceKey {
  id: string
  /** The locking transactions (several when the row is share-locked by more than one). */
  xids: string[]
  /** Their lock modes, in the order of xids: `For Update`, `For No Key Update`, `For Share`, `For Key Share`, `Update`, `No Key Update`. */
  modes: string[]
}

/** A committed task instance as its OpenLineage COMPLETE event needs it (instants in epoch microseconds). */
export interface LineageRow {
  dagId: string
  taskId: string
  mapIndex: number
  tryNumber: number
  endMicros: bigint | null
  runMicros: bigint
  clearNumber: number
  confOpenLineage: Record<string, unknown> | null
  outputs: Array<{name: string; uri: string}>
  /** dag_run.data_interval_start / data_interval_end in epoch microseconds; null when not set. */
  dataIntervalStartMicros: bigint | null
  dataIntervalEndMicros: bigint | null
  /** The task and its DAG as the serialized DAG of the try's version declares them; null without one. */
  declared: DeclaredJob | null
}

/**
 * What the serialized DAG of a try's version says about the task and its DAG, for the job facets
 * the worker's COMPLETE carries (ownership, tags, documentation). A value the document leaves out
 * is Airflow's default: null for the docs and the description, no tags, and for `owner` the
 * document's `client_defaults.tasks.owner` (3.1+) or the schema default `airflow`.
 */
export interface DeclaredJob {
  /** The task's `owner`. */
  taskOwner: string
  /** The distinct owners of the DAG's tasks (the DAG's `owner` is them joined with ", "). */
  taskOwners: string[]
  /** The task's doc, doc_md, doc_json, doc_yaml and doc_rst. */
  taskDocs: {
    doc: string | null
    docMd: string | null
    docJson: string | null
    docYaml: string | null
    docRst: string | null
  }
  dagDocMd: string | null
  dagDescription: string | null
  dagTags: string[]
  /** The operator's fully qualified class name (`_task_module` + `.` + `task_type`), as `[openlineage] disabled_for_operators` names it. */
  operatorClass: string | null
  /** The task's `_selective_enable_ol` param (else the DAG's): true, false, or null when unset. */
  selectiveEnable: boolean | null
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

/** A consumer DAG as the scheduler's asset-triggered step sees it. */
export interface DownstreamFacts {
  dagId: string
  paused: boolean
  stale: boolean
  importErrors: boolean
  maxActiveRuns: number | null
  /** Queued and running runs of the DAG, of every type (what the scheduler counts against max_active_runs). */
  activeRuns: number
  /** 3.2+: a partitioned timetable (queued through a partition mapper, not evaluated here). */
  partitioned: boolean
  /** 3.2+: `dag.exceeds_max_non_backfill`, the scheduler's cached cap flag (false before 3.2). */
  maxRunsFlag: boolean
  /** `dag.timetable.__var.asset_condition` of its latest serialized DAG; undefined without one. */
  condition: unknown
  /** Its queue rows' assets and their aliases (this completion's included). */
  queued: QueuedAssets
}

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

/** A run that consumed an event; runId null for a 3.2+ partition log row (no run yet). */
export interface ConsumingRun {
  eventId: number
  dagId: string
  runId: string | null
}

export interface LockedTaskInstance {
  state: StoredState
  tryNumber: number | null
  /** The transaction id of the locked row version (xmin): any write to the row since changes it. */
  xmin: string
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

/** Whether a selection is a range of runs by run_after: it is then paged run by run (selectRunPage), in (run_after, run, id) order. */
export const rangeOfRuns = (filter: TaskInstanceFilter): boolean =>
  filter.timeColumn !== 'end_date' && Boolean(filter.since || filter.until)

/** A dag run as `--continue-run` decides on it. */
export interface ClearRun {
  id: number
  state: string | null
  bundleVersion: string | null
  createdDagVersionId: string | null
}

/** A task instance Airflow's clear would select (failed or upstream_failed). */
export interface ClearTarget {
  id: string
  taskId: string
  mapIndex: number
  state: StoredState
  tryNumber: number | null
  operator: string | null
  dagVersionId: string | null
}

export interface ClearedTaskInstance {
  oldId: string
  newId: string
}

/** A task instance of a selection page: enough to name it and list it in the selection's breakdown. */
export interface SelectedTaskInstance {
  id: string
  dagId: string
  runId: string
  taskId: string
  mapIndex: number
  state: string | null
  /** A missing-events page: the strongest evidence of how its try came to be success. */
  evidence?: TryEvidenceKind
}

/** The outlets of a try that have no event, and what the database says about why. */
/** Run and task ids a selection names that nothing carries, with the ids a typo may have meant. */
export interface UnknownSelectors {
  runIds: string[]
  taskIds: string[]
  runCandidates: string[]
  taskCandidates: string[]
}

export interface MissingOutlets {
  assetIds: number[]
  evidence: TryEvidence
}

/** How many selected task instances one run holds in one state (NULL: no state yet). */
export interface SelectionGroup {
  dagId: string
  runId: string
  state: string | null
  count: number
}

export interface TaskInstanceFilter {
  dagId?: string | undefined
  runIds: readonly string[]
  taskIds: readonly string[]
  mapIndex?: number | undefined
  since?: Date | undefined
  until?: Date | undefined
  /** What since/until compare: the run's run_after (complete) or the TI's end_date (replay-events). */
  timeColumn?: 'run_after' | 'end_date' | undefined
  /** Only task instances in these states. */
  states?: readonly string[] | undefined
  /** Only task instances with an active declared outlet lacking an event since their start_date. */
  missingEventsOnly?: boolean | undefined
  /** With missingEventsOnly: only tries whose strongest evidence is one of these kinds (see TryEvidence). */
  evidence?: readonly TryEvidenceKind[] | undefined
  /** --shard K/N: a stable hash partition of the ids. */
  shard?: {index: number; count: number} | undefined
}

/** The event filters of export-events and audit-events. */
export interface EventFilter {
  since?: Date | undefined
  until?: Date | undefined
  sourceDagId?: string | undefined
  /** Asset names or uris. */
  assets: readonly string[]
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

/** A session holding a row lock, as pg_stat_activity describes it. */
export interface RowHolder {
  pid: number
  applicationName: string
  since: Date | null
  state: string | null
  user: string
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

export type EventClass =
  'ok' | 'external' | 'orphan_missing_ti' | 'orphan_not_success' | 'superseded_by_rerun' | 'duplicate' | 'unattributed'

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
}

export interface QueueOrphan {
  kind: 'queue_missing_asset' | 'queue_missing_dag' | 'queue_missing_event' | 'alias_link_missing_event'
  detail: string
}

export interface ServerInfo {
  version: string
  versionNum: number
  currentUser: string
  database: string
  isSuperuser: boolean
  /** Member of pg_monitor (or superuser): can see every session's locks and queries. */
  canMonitor: boolean
  /** The TLS version of this session ('TLSv1.3'), null when it is not encrypted. */
  tls: string | null
}

export interface PrivilegeCheck {
  object: string
  kind: 'table' | 'sequence'
  privilege: 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE' | 'USAGE'
}

export interface PrivilegeResult extends PrivilegeCheck {
  granted: boolean
}

export interface ServerSetting {
  name: string
  setting: string
  unit: string | null
  source: string
}

/**
 * One look at a client session of this database: what it runs, what it waits for, who blocks it
 * (the sessions directly in its way), and the row locks it holds.
 */
export interface SessionRow {
  pid: number
  application_name: string
  usename: string | null
  state: string | null
  wait_event_type: string | null
  wait_event: string | null
  xact_start: Date | null
  state_change: Date | null
  query: string | null
  /** The client's address; null for a Unix-socket connection. */
  client_addr: string | null
  backend_start: Date | null
  /** Its transaction's id, once it has one (a write or a row lock takes one); what pgrowlocks names lockers by. */
  backend_xid: string | null
  blocked_by: number[]
  sampled_at: Date
  /** When the current lock wait began, where the server reports it, else null. */
  wait_start: Date | null
  /** The lock this session waits for, if any. */
  waiting_on: {
    locktype: string
    relation: string | null
    page: number | null
    tuple: number | null
    mode: string
  } | null
  /** Tuple locks it holds (a row-lock waiter holds the tuple lock of the row it queues for). */
  held_tuples: Array<{relation: string; page: number; tuple: number}>
  /** Tables on which it holds row-level intent locks (FOR UPDATE or writes). */
  row_locked_tables: string[]
}

/** The key by which assets are matched across databases: name and uri together. */
export const assetKey = (asset: {name: string; uri: string}) => `${asset.name}\u0000${asset.uri}`

/** Which DAGs `explain` reads: every asset-scheduled one, these ids, or the consumers of these assets (names or uris). */
export type ExplainSelection =
  {kind: 'all'} | {kind: 'dags'; dagIds: readonly string[]} | {kind: 'assets'; assets: readonly string[]}

export interface ExplainEvent {
  id: number
  timestamp: Date
  sourceDagId: string | null
  sourceRunId: string | null
  sourceTaskId: string | null
  sourceMapIndex: number | null
}

/** A DAG as `dags_needing_dagruns` reads it (the preview's facts but its queue), with its queue rows and their events. */
export interface ExplainDag extends Omit<DownstreamFacts, 'queued'> {
  /** Whether it has a serialized DAG at all. */
  serialized: boolean
  queue: Array<{
    assetId: number
    /** null: the asset row is gone (an orphan queue row). */
    asset: {name: string; uri: string; active: boolean} | null
    createdAt: Date
    /** The event that queued it (3.4: the row's own; before: the asset's latest at or before the row). */
    event: ExplainEvent | null
  }>
}

export interface ExplainAsset {
  id: number
  name: string
  uri: string
  active: boolean
  lastEvent: ExplainEvent | null
}

export interface ExplainAlias {
  name: string
  assetIds: number[]
  lastEvent: ExplainEvent | null
}

export interface ExplainRun {
  dagId: string
  runId: string
  state: string | null
  runAfter: Date
  queuedAt: Date | null
  /** dagrun_asset_event: the events the run consumed. */
  eventIds: number[]
}

/** A pending `asset_partition_dag_run` (no run created yet) and the assets it received events of. */
export interface ExplainPartition {
  id: number
  dagId: string
  partitionKey: string
  createdAt: Date
  received: Array<{assetId: number; sourceKeys: string[]}>
}

export interface ExplainPage {
  dags: ExplainDag[]
  assets: ExplainAsset[]
  aliases: ExplainAlias[]
  runs: ExplainRun[]
  partitions: ExplainPartition[]
}
