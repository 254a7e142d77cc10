import type {QueuedAssets} from '../../airflow/assetCondition.js'
import type {Executor} from '../../engine/engine.js'

/**
 * The scheduler's asset-triggered step as it reads the database (postgres/downstream.ts,
 * postgres/explain.ts): the consumers an event reaches, and `explain`'s pages of DAGs.
 */
export interface DownstreamStore {
  /**
   * Every consumer DAG these events' assets and aliases reach, with what the scheduler reads to
   * decide whether it creates a run (one statement; a write reads it with queueConsumers).
   */
  readDownstream(ex: Executor, assetIds: readonly number[], aliasIds: readonly number[]): Promise<DownstreamFacts[]>
  /** `explain`: the next page of DAG ids (by id, after `after`) the selection names. */
  pageExplainDags(ex: Executor, selection: ExplainSelection, after: string, limit: number): Promise<string[]>
  /**
   * `explain`: what the scheduler reads about these DAGs (flags, runs against the cap, latest
   * condition, queue rows and the events that queued them), the assets their conditions name
   * (`lastEvent` null: readExplainLastEvents reads it for the leaves that need it) and the aliases
   * with their last events, their last `runsPerDag` asset-triggered runs with the events each
   * consumed, and (3.2+) their pending partition runs. A bounded number of statements whatever
   * the page's size.
   */
  readExplainPage(ex: Executor, dagIds: readonly string[], runsPerDag: number): Promise<ExplainPage>
  /** `explain`: the last event of each of these assets (none: not in the map), in one statement. */
  readExplainLastEvents(ex: Executor, assetIds: readonly number[]): Promise<Map<number, ExplainEvent>>
  /**
   * `explain`, for the leaves it calls missing: which runs of these DAGs consumed these events
   * (`dagrun_asset_event`, whatever --runs shows), and the tasks that produce these assets
   * (`task_outlet_asset_reference`) with their DAG's flags and latest run. Two statements.
   */
  readExplainLeafEvidence(
    ex: Executor,
    dagIds: readonly string[],
    eventIds: readonly number[],
    assetIds: readonly number[],
  ): Promise<{consumed: ExplainConsumption[]; producers: ExplainProducer[]}>
}

/** A run of a DAG that consumed an event (`dagrun_asset_event`). */
export interface ExplainConsumption {
  dagId: string
  eventId: number
  runId: string
}

/** A task with the asset among its outlets, and what keeps its DAG from producing it. */
export interface ExplainProducer {
  assetId: number
  dagId: string
  taskId: string
  paused: boolean
  stale: boolean
  importErrors: boolean
  /** Its DAG's latest run (by run_after), of any type. */
  latestRun: {runId: string; state: string | null} | null
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
  /** Its latest serialized DAG's `catchup` (absent: false, `SerializedDAG.catchup`'s default). */
  catchup: boolean
  /**
   * `dag.asset_expression` is set: the DAG processor writes it from the DAG's asset schedule and
   * NULL when it has none; 3.2+'s `dags_needing_dagruns` deletes the queue rows of a DAG without it.
   */
  hasAssetExpression: boolean
  /**
   * 3.3+, a partitioned timetable airlock can read: the rollup fingerprint the scheduler compares
   * pending partition runs with (src/airflow/rollupFingerprint.ts).
   */
  rollupFingerprint?: Record<string, unknown>
  /**
   * 3.3+, a partitioned timetable airlock can read: its partition mappers by asset name and the
   * default (`get_partition_mapper`), for the rollups among them (src/airflow/rollupWindow.ts).
   */
  partitionMappers?: {byName: Record<string, unknown>; fallback: unknown}
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
  /** When its last `partitioned_asset_key_log` row was written (undefined: it received none). */
  lastReceivedAt?: Date
  /**
   * 3.3+ (the `fresh_active` partition step): the fingerprint stamped when the row was queued
   * (null: none, as rows queued before 3.3), and `received` counts active assets only. Left out
   * before 3.3, whose step reads neither.
   */
  fingerprint?: unknown
}

/**
 * Before 3.4 (one queue row per asset and DAG), the event window of a DAG's next asset-triggered
 * run as `_create_dag_runs_asset_triggered` takes it, and the events it leaves behind. Instants
 * are text to the microsecond, as the scheduler compares them.
 */
export interface ExplainWindow {
  dagId: string
  /** max(created_at) of its queue rows: the run's `run_after` and the window's end (null: no row). */
  triggered: string | null
  /** The window's start, exclusive: the previous asset-triggered run's `run_after`, or (3.3, catchup off, no such run) its first reference; null: the beginning of time. */
  after: string | null
  /** The previous asset-triggered run's `run_after` (before `triggered`; with no row, the latest). */
  previous: string | null
  /** Its assets' (3.1+: and aliases') events in (after, triggered]: the ones its next run consumes; the first `limit`. */
  consumed: {count: number; events: ExplainEvent[]}
  /**
   * Events of an asset (or alias) it was scheduled on when they came, stamped after `triggered`
   * (no queue row: after `previous`), the first `limit`: no queue row is theirs, so no run comes
   * for them, and the next run leaves them to the one after (apache/airflow #56050).
   */
  stranded: {count: number; events: ExplainEvent[]}
}

export interface ExplainPage {
  dags: ExplainDag[]
  /** Before 3.4, for the page's DAGs that are not partitioned. */
  windows: ExplainWindow[]
  assets: ExplainAsset[]
  aliases: ExplainAlias[]
  runs: ExplainRun[]
  partitions: ExplainPartition[]
  /** Set by readExplainLeafEvidence's caller: the consumptions and producers of the missing leaves. */
  consumed?: ExplainConsumption[]
  producers?: ExplainProducer[]
}
