import type {TiRow} from './rows.js'

/*
 * What a scenario states (ProducerOptions, ConsumerOptions) and what build() gives back (World);
 * the builder and its defaults are in builder.ts.
 */

export type TiState =
  | 'running'
  | 'success'
  | 'failed'
  | 'up_for_retry'
  | 'up_for_reschedule'
  | 'upstream_failed'
  | 'skipped'
  | 'removed'
  | 'scheduled'
  | 'queued'
  | 'deferred'
  | 'restarting'
  | null

export interface ProducerOptions {
  /** Tasks of the DAG, one task instance each per run and map index: a count (`task_1`…) or ids. Default: `['produce']`. */
  tasks?: number | string[]
  /** Active outlet assets per task. Default 1. */
  outlets?: number
  /** Further declared outlets per task whose asset is not active (no asset_active row). Default 0. */
  inactive?: number
  /** State of every task instance (default `running`), or per task id, the others running. */
  state?: TiState | Record<string, TiState>
  /** Dag runs. Default 1. */
  runs?: number
  /** Map indexes of each task's instances. Default `[-1]` (not mapped). */
  mapIndexes?: number[]
  /** try_number of every task instance. Default 1. */
  tryNumber?: number
  /** dag.owners (the `owner` of Airflow's log rows). Default `airflow`. */
  owner?: string
  /** Task instances in state success already have one event per active outlet (extra `{}`, at their end_date), as their completion wrote. */
  emitted?: boolean
  /**
   * Task instances in state success have the log row Airflow's worker path writes for the success
   * from 3.2 (`ti_update_state`, apache/airflow #61932: event `success`, the try's key and number,
   * the DAG's owners, `{"host_name": "worker-1"}` in Python's json.dumps spacing): the evidence
   * that a worker finished the try, so events it lacks were lost.
   */
  workerLog?: boolean
  /**
   * Further outlets each task declares as `Asset.ref(name=…)` / `Asset.ref(uri=…)`, after its
   * assets: they resolve to whichever asset has that name or uri (serialized DAG only).
   */
  refs?: Array<{name: string} | {uri: string}>
  /** Asset aliases each task declares as outlets (serialized DAG only); each gets its asset_alias row. */
  aliases?: string[]
  /**
   * How the DAG version's serialized DAG is stored: `json` (serialized_dag.data, the default),
   * `compressed` (data_compressed, zlib, as [core] compress_serialized_dags writes it) or `none`
   * (no serialized_dag row: outlets only in task_outlet_asset_reference).
   */
  serialized?: 'json' | 'compressed' | 'none'
  /**
   * Mapped tasks that expand over another task's return value: mapped task → the task it expands
   * over (`.expand(x=upstream.output)`). The serialized DAG marks it `_is_mapped` with that xcomref
   * in its `expand_input`, and lists it downstream of the upstream task.
   */
  expandsOver?: Record<string, string>
  /** Task dependencies as the serialized DAG lists them: task → its direct downstream tasks (`downstream_task_ids`). */
  downstream?: Record<string, string[]>
  /**
   * The serialized DAG's `client_defaults.tasks` (format 3, 3.1+: the defaults kept once, a task
   * leaving out a value equal to them), e.g. `{retries: 2}`.
   */
  clientDefaults?: {retries?: number}
  /** `retries` of each task in the serialized DAG (left out when 0, as Airflow leaves out a default); per task or for all. */
  retries?: number | Record<string, number>
  /** Tasks that are setups or teardowns (`is_setup` / `is_teardown` in the serialized DAG). */
  setups?: string[]
  teardowns?: string[]
  /** Map indexes of these tasks only (the others keep `mapIndexes`). */
  mappedTasks?: Record<string, number[]>
  /** dag_run.state of every run. Default `running`. */
  runState?: 'queued' | 'running' | 'success' | 'failed'
}

export type ScheduleReference = 'id' | 'name' | 'uri'

export interface ConsumerOptions {
  /**
   * What the DAG is scheduled on. Each entry is a producer DAG id (all its declared outlets,
   * active or not), `<dag>.<task>` (that task's outlets) or an asset name.
   */
  on?: string[]
  /** Which schedule reference ties it to those assets: by asset id (default), name or uri; several give one reference each. */
  by?: ScheduleReference | ScheduleReference[]
  /** Also scheduled on this asset alias (created on first mention) through dag_schedule_asset_alias_reference. */
  alias?: string
  /** is_paused. */
  paused?: boolean
  /** is_stale: the DAG's file is gone (which releases still queue it differs). */
  stale?: boolean
  owner?: string
  /**
   * How its schedule combines what it is scheduled on, in its serialized DAG's
   * `timetable.__var.asset_condition`: `all` (`schedule=[a, b]`, AssetAll, the default) or `any`
   * (`a | b`, AssetAny).
   */
  condition?: 'all' | 'any'
  /** dag.max_active_runs (default 16). */
  maxActiveRuns?: number
}

export interface AssetRow {
  id: number
  name: string
  uri: string
  active: boolean
  dag_id: string
  task_id: string
}

export interface RunRow {
  id: number
  dag_id: string
  run_id: string
  logical_date: Date
}

/** What build() wrote, read back once: a snapshot; read a row again (tiById) after changing it. */
export interface World {
  /** A task instance as built; `taskId` defaults to the producer's first task, `run` to 1, `mapIndex` to its first map index. */
  ti(dagId: string, taskId?: string, at?: {run?: number; mapIndex?: number}): TiRow
  /** Every task instance of a producer: by run, then task in declaration order, then map index. */
  tis(dagId: string): TiRow[]
  /** A producer's outlet assets (or one task's), active ones first per task, as declared. */
  assets(dagId: string, taskId?: string): AssetRow[]
  /** An asset by name. */
  asset(name: string): AssetRow
  /** A producer's dag run r (1-based, default 1). */
  run(dagId: string, run?: number): RunRow
}

/** A producer as the builder holds it: its options resolved to their defaults. */
export interface Producer {
  dagId: string
  tasks: string[]
  outlets: number
  inactive: number
  stateOf: (taskId: string) => TiState
  runs: number
  mapIndexes: number[]
  tryNumber: number
  owner: string
  emitted: boolean
  workerLog: boolean
  refs: Array<{name: string} | {uri: string}>
  aliases: string[]
  serialized: 'json' | 'compressed' | 'none'
  downstream: Record<string, string[]>
  expandsOver: Record<string, string>
  clientDefaults: {retries?: number} | undefined
  mappedTasks: Record<string, number[]>
  retriesOf: (taskId: string) => number
  setups: string[]
  teardowns: string[]
  runState: 'queued' | 'running' | 'success' | 'failed'
}

/** A consumer as the builder holds it: its options resolved to their defaults. */
export interface Consumer {
  dagId: string
  on: string[]
  by: ScheduleReference[]
  alias: string | undefined
  paused: boolean
  stale: boolean
  owner: string
  condition: 'all' | 'any'
  maxActiveRuns: number
}

/** The assets a consumer's `on` names: producer DAG ids, `<dag>.<task>` or asset names. */
export function assetsMatching(assets: AssetRow[], on: string[], consumer: string): AssetRow[] {
  const matched = new Set<AssetRow>()
  for (const entry of on) {
    const hits = assets.filter((a) => a.name === entry || a.dag_id === entry || `${a.dag_id}.${a.task_id}` === entry)
    if (hits.length === 0)
      throw new Error(
        `scenario: consumer ${consumer} is scheduled on "${entry}", which names no producer, task or asset`,
      )
    for (const hit of hits) matched.add(hit)
  }

  return [...matched]
}

/** The World over the rows build() wrote. */
export function worldOf(producers: Producer[], runs: RunRow[], tis: Map<string, TiRow[]>, assets: AssetRow[]): World {
  const producerOf = (dagId: string) => {
    const producer = producers.find((p) => p.dagId === dagId)
    if (!producer) throw new Error(`scenario: no producer ${dagId}`)
    return producer
  }

  const runOf = (dagId: string, r = 1): RunRow => {
    const run = runs.filter((x) => x.dag_id === dagId)[r - 1]
    if (!run) throw new Error(`scenario: ${dagId} has no run ${r}`)
    return run
  }

  const ordered = (dagId: string): TiRow[] => {
    const p = producerOf(dagId)
    const runIds = runs.filter((x) => x.dag_id === dagId).map((x) => x.run_id)
    const rank = (t: TiRow) => [runIds.indexOf(t.run_id), p.tasks.indexOf(t.task_id), t.map_index]
    return [...(tis.get(dagId) ?? [])].sort((a, b) => {
      const [x, y] = [rank(a), rank(b)]
      return x[0]! - y[0]! || x[1]! - y[1]! || x[2]! - y[2]!
    })
  }

  return {
    ti(dagId, taskId, at = {}) {
      const p = producerOf(dagId)
      const task = taskId ?? p.tasks[0]!
      const runId = runOf(dagId, at.run).run_id
      const mapIndex = at.mapIndex ?? (p.mappedTasks[task] ?? p.mapIndexes)[0]!
      const row = tis.get(dagId)?.find((t) => t.task_id === task && t.run_id === runId && t.map_index === mapIndex)
      if (!row) throw new Error(`scenario: no task instance ${dagId}.${task} in ${runId} [${mapIndex}]`)
      return row
    },
    tis: ordered,
    assets(dagId, taskId) {
      producerOf(dagId)
      return assets.filter((a) => a.dag_id === dagId && (taskId === undefined || a.task_id === taskId))
    },
    asset(name) {
      const asset = assets.find((a) => a.name === name)
      if (!asset) throw new Error(`scenario: no asset ${name}`)
      return asset
    },
    run: runOf,
  }
}
