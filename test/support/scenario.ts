import {createHash, randomUUID} from 'node:crypto'
import {deflateSync} from 'node:zlib'

import type {Knex} from 'knex'

import {seedWorld, type SeedOptions} from '../../src/fixtures/seed.js'

/**
 * The sandbox's seeded demo world (seedWorld), kept for tests written against it; the suite's own
 * tests use scenario() below. Its special cases (etl_001.task_1's last outlet inactive, etl_001's
 * task_2 success and task_3 up_for_retry, report_NNN consumers with report_003 paused) live in the
 * seed, not in the test that relies on them: prefer scenario().
 */
export async function seed(knex: Knex, options: Partial<SeedOptions> = {}) {
  return knex.transaction((trx) => seedWorld(trx, {dags: 2, runs: 1, tasks: 3, outlets: 2, consumers: 3, ...options}))
}

/** Empties the world a writer test works on and seeds it again (sequences restart). */
export async function resetWorld(knex: Knex, options: Partial<SeedOptions> = {}) {
  await knex.raw(
    'truncate dag, dag_bundle, asset, asset_alias, log, log_template, asset_event, dag_run restart identity cascade',
  )
  return seed(knex, options)
}

export interface TiRow {
  id: string
  dag_id: string
  run_id: string
  task_id: string
  map_index: number
  state: string | null
  start_date: Date | null
  end_date: Date | null
  duration: number | null
  next_method: string | null
  next_kwargs: unknown
  try_number: number | null
}

export async function ti(knex: Knex, dagId: string, taskId: string): Promise<TiRow> {
  const row = (await knex('task_instance').where({dag_id: dagId, task_id: taskId}).orderBy('run_id').first()) as
    TiRow | undefined
  if (!row) throw new Error(`no TI ${dagId}.${taskId}`)
  return row
}

export async function tiById(knex: Knex, id: string): Promise<TiRow> {
  return (await knex('task_instance').where({id}).first()) as TiRow
}

export async function eventsOf(knex: Knex, t: Pick<TiRow, 'dag_id' | 'run_id' | 'task_id'>) {
  return knex('asset_event as e')
    .join('asset as a', 'a.id', 'e.asset_id')
    .where({'e.source_dag_id': t.dag_id, 'e.source_run_id': t.run_id, 'e.source_task_id': t.task_id})
    .select('e.*', 'a.name as asset_name')
    .orderBy('e.id') as Promise<Array<Record<string, unknown> & {asset_name: string; extra: unknown; id: number}>>
}

export async function countRows(knex: Knex, table: string): Promise<number> {
  const row = (await knex(table).count({n: '*'}).first()) as {n: string | number}
  return Number(row.n)
}

/** Row counts of every table a writer touches: "nothing written" is asserted by comparing these. */
export async function writeFootprint(knex: Knex): Promise<Record<string, number>> {
  const tables = [
    'asset_event',
    'asset_dag_run_queue',
    'asset_alias_asset_event',
    'log',
    'asset',
    'asset_active',
    'asset_alias_asset',
  ]
  const out: Record<string, number> = {}
  for (const table of tables) out[table] = await countRows(knex, table)
  const {rows} = await knex.raw<{rows: Array<{n: string}>}>(
    `select count(*) as n from task_instance where state = 'success'`,
  )
  out.success_tis = Number(rows[0]!.n)
  return out
}

/* ------------------------------------------------------------------------------------------------
 * The scenario builder: a world stated by the test itself, written as plain rows.
 *
 *   const world = await scenario(knex)
 *     .producer('etl', {outlets: 3})                    // DAG etl, one run, task `produce` running, 3 active outlets
 *     .producer('etl2', {outlets: 2, inactive: 1, state: 'failed'})
 *     .consumer('report', {on: ['etl']})                // scheduled (by asset id) on every outlet of etl
 *     .build()
 *   world.ti('etl')          // etl.produce's task_instance row, first run
 *   world.assets('etl')      // its outlet assets, in declaration order
 *
 * Names and values are fixed so tests can spell them out:
 *   - task ids: `produce` (default), `task_1`…`task_N` for `tasks: N`, or the ids given;
 *   - outlet assets, per task: active `<dag>.<task>.out_1`…`out_<outlets>`, then the inactive ones
 *     `out_<outlets+1>`…; uri `s3://lake/<dag>/<task>/out_<k>`; group `asset`, extra `{}`;
 *   - run r (1-based) is the scheduled run of 2026-12-r, state running: run 1 is
 *     `scheduled__2026-12-01T00:00:00+00:00` with that logical date, run 2 the next day, …;
 *   - a task instance: try_number 1 (or `tryNumber`), start_date 5 minutes before build(); end_date
 *     1 minute before build() and duration 240 s for finished states (success, failed, skipped,
 *     upstream_failed, up_for_retry), otherwise null; no next_method/next_kwargs;
 *   - every DAG: owners `airflow` (or `owner`), bundle `dags-folder`, one dag_version, not stale (unless `stale`).
 * build() first empties every Airflow table (TRUNCATE … RESTART IDENTITY CASCADE; alembic_version
 * kept), so nothing else exists: no events, log rows or queue rows unless the test writes them (or
 * `emitted`), and ids start at 1.
 * ---------------------------------------------------------------------------------------------- */

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

interface Producer {
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

interface Consumer {
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

/** A producer's serialized DAG in Airflow's encoding (`{"__type": "operator", "__var": {…}}` per task). */
function serializedDag(p: Producer, assets: readonly AssetRow[]): unknown {
  return {
    __version: 1,
    ...(p.clientDefaults ? {client_defaults: {tasks: p.clientDefaults}} : {}),
    dag: {
      dag_id: p.dagId,
      tasks: p.tasks.map((taskId) => ({
        __type: 'operator',
        __var: {
          task_id: taskId,
          // What every serialized operator names: its module and class (the provider's filters read them).
          _task_module: 'airflow.providers.standard.operators.python',
          task_type: 'PythonOperator',
          ...(p.downstream[taskId]?.length ? {downstream_task_ids: [...p.downstream[taskId]].sort()} : {}),
          ...(p.retriesOf(taskId) ? {retries: p.retriesOf(taskId)} : {}),
          ...(p.setups.includes(taskId) ? {is_setup: true} : {}),
          ...(p.teardowns.includes(taskId) ? {is_teardown: true} : {}),
          ...(p.expandsOver[taskId]
            ? {
                _is_mapped: true,
                expand_input: {
                  type: 'dict-of-lists',
                  value: {
                    __type: 'dict',
                    __var: {x: {__type: 'xcomref', __var: {task_id: p.expandsOver[taskId], key: 'return_value'}}},
                  },
                },
              }
            : {}),
          outlets: [
            ...assets
              .filter((a) => a.dag_id === p.dagId && a.task_id === taskId)
              .map((a) => ({__type: 'asset', __var: {name: a.name, uri: a.uri, group: 'asset', extra: {}}})),
            ...p.refs.map((ref) => ({__type: 'asset_ref', __var: ref})),
            ...p.aliases.map((name) => ({__type: 'asset_alias', __var: {name, group: 'asset'}})),
          ],
        },
      })),
    },
  }
}

const finishedStates = new Set<TiState>(['success', 'failed', 'skipped', 'upstream_failed', 'up_for_retry'])

export class ScenarioBuilder {
  private readonly producers: Producer[] = []
  private readonly consumers: Consumer[] = []

  constructor(private readonly knex: Knex) {}

  /** A DAG whose tasks run and declare outlet assets (see the defaults above). */
  producer(dagId: string, options: ProducerOptions = {}): this {
    this.claim(dagId)
    const tasks =
      typeof options.tasks === 'number'
        ? Array.from({length: options.tasks}, (_, i) => `task_${i + 1}`)
        : (options.tasks ?? ['produce'])
    const state = options.state === undefined ? 'running' : options.state
    if (state !== null && typeof state === 'object') {
      for (const taskId of Object.keys(state))
        if (!tasks.includes(taskId))
          throw new Error(`scenario: ${dagId} has no task ${taskId} (tasks: ${tasks.join(', ')})`)
    }

    this.producers.push({
      dagId,
      tasks,
      outlets: options.outlets ?? 1,
      inactive: options.inactive ?? 0,
      stateOf: (taskId) =>
        state !== null && typeof state === 'object'
          ? state[taskId] === undefined
            ? 'running'
            : state[taskId]!
          : state,
      runs: options.runs ?? 1,
      mapIndexes: options.mapIndexes ?? [-1],
      tryNumber: options.tryNumber ?? 1,
      owner: options.owner ?? 'airflow',
      emitted: options.emitted ?? false,
      workerLog: options.workerLog ?? false,
      refs: options.refs ?? [],
      aliases: options.aliases ?? [],
      serialized: options.serialized ?? 'json',
      downstream: Object.fromEntries(
        [...new Set([...Object.keys(options.downstream ?? {}), ...Object.values(options.expandsOver ?? {})])].map(
          (task) => [
            task,
            [
              ...new Set([
                ...(options.downstream?.[task] ?? []),
                ...Object.entries(options.expandsOver ?? {})
                  .filter(([, upstream]) => upstream === task)
                  .map(([mapped]) => mapped),
              ]),
            ],
          ],
        ),
      ),
      expandsOver: options.expandsOver ?? {},
      clientDefaults: options.clientDefaults,
      mappedTasks: options.mappedTasks ?? {},
      retriesOf: (taskId) =>
        typeof options.retries === 'object' ? (options.retries[taskId] ?? 0) : (options.retries ?? 0),
      setups: options.setups ?? [],
      teardowns: options.teardowns ?? [],
      runState: options.runState ?? 'running',
    })
    return this
  }

  /** A DAG scheduled on assets (and/or an alias); it has no runs of its own. */
  consumer(dagId: string, options: ConsumerOptions = {}): this {
    this.claim(dagId)
    const by = options.by === undefined ? ['id' as const] : Array.isArray(options.by) ? options.by : [options.by]
    this.consumers.push({
      dagId,
      on: options.on ?? [],
      by,
      alias: options.alias,
      paused: options.paused ?? false,
      stale: options.stale ?? false,
      owner: options.owner ?? 'airflow',
      condition: options.condition ?? 'all',
      maxActiveRuns: options.maxActiveRuns ?? 16,
    })
    return this
  }

  /** Empties every Airflow table (restart identity, so ids start at 1), then writes the stated world in one transaction. */
  async build(): Promise<World> {
    return this.knex.transaction(async (trx) => {
      const {rows: tables} = await trx.raw<{rows: Array<{tablename: string}>}>(
        `select tablename from pg_tables where schemaname = 'public' and tablename <> 'alembic_version' order by tablename`,
      )
      await trx.raw(
        `truncate ${tables.map(() => '??').join(', ')} restart identity cascade`,
        tables.map((t) => t.tablename),
      )
      const now = (await trx.raw<{rows: Array<{now: Date}>}>('select now() as now')).rows[0]!.now
      const ago = (minutes: number) => new Date(now.getTime() - minutes * 60_000)

      await trx('dag_bundle').insert({name: 'dags-folder', active: true, version: null, last_refreshed: now})
      const [template] = await trx('log_template')
        .insert({
          filename:
            'dag_id={{ ti.dag_id }}/run_id={{ ti.run_id }}/task_id={{ ti.task_id }}/attempt={{ try_number }}.log',
          elasticsearch_id: '{dag_id}-{task_id}-{run_id}-{map_index}-{try_number}',
          created_at: now,
        })
        .returning('id')

      const dags = [
        ...this.producers.map((p) => ({
          dagId: p.dagId,
          paused: false,
          stale: false,
          owner: p.owner,
          summary: '@daily',
          maxActiveRuns: 16,
        })),
        ...this.consumers.map((c) => ({
          dagId: c.dagId,
          paused: c.paused,
          stale: c.stale,
          owner: c.owner,
          summary: 'Asset',
          maxActiveRuns: c.maxActiveRuns,
        })),
      ]
      const versions = new Map<string, string>()
      if (dags.length > 0) {
        await trx('dag').insert(
          dags.map((d) => ({
            dag_id: d.dagId,
            is_paused: d.paused,
            is_stale: d.stale,
            last_parsed_time: now,
            fileloc: `/opt/airflow/dags/${d.dagId}.py`,
            relative_fileloc: `${d.dagId}.py`,
            bundle_name: 'dags-folder',
            owners: d.owner,
            timetable_summary: d.summary,
            max_active_tasks: 16,
            max_active_runs: d.maxActiveRuns,
            max_consecutive_failed_dag_runs: 0,
            has_task_concurrency_limits: false,
          })),
        )
        for (const d of dags) versions.set(d.dagId, randomUUID())
        await trx('dag_version').insert(
          dags.map((d) => ({
            id: versions.get(d.dagId),
            version_number: 1,
            dag_id: d.dagId,
            bundle_name: 'dags-folder',
            created_at: now,
            last_updated: now,
          })),
        )
      }

      // Outlet assets, task by task: the active ones, then the inactive ones.
      const declared = this.producers.flatMap((p) =>
        p.tasks.flatMap((taskId) =>
          Array.from({length: p.outlets + p.inactive}, (_, i) => ({
            dag_id: p.dagId,
            task_id: taskId,
            name: `${p.dagId}.${taskId}.out_${i + 1}`,
            uri: `s3://lake/${p.dagId}/${taskId}/out_${i + 1}`,
            active: i < p.outlets,
          })),
        ),
      )
      const assets: AssetRow[] = []
      if (declared.length > 0) {
        const ids = await trx('asset')
          .insert(
            declared.map((a) => ({
              name: a.name,
              uri: a.uri,
              group: 'asset',
              extra: '{}',
              created_at: now,
              updated_at: now,
            })),
          )
          .returning('id')
        declared.forEach((a, i) => assets.push({...a, id: (ids[i] as {id: number}).id}))
        const active = assets.filter((a) => a.active)
        if (active.length > 0) await trx('asset_active').insert(active.map((a) => ({name: a.name, uri: a.uri})))
        await trx('task_outlet_asset_reference').insert(
          assets.map((a) => ({asset_id: a.id, dag_id: a.dag_id, task_id: a.task_id, created_at: now, updated_at: now})),
        )
      }

      // The serialized DAG of each producer's version, as the DAG processor writes it: every task
      // with its declared outlets (assets, then references, then aliases).
      const serialized = this.producers.filter((p) => p.serialized !== 'none')
      if (serialized.length > 0) {
        await trx('serialized_dag').insert(
          serialized.map((p) => {
            const data = serializedDag(p, assets)
            return {
              id: randomUUID(),
              dag_id: p.dagId,
              data: p.serialized === 'json' ? JSON.stringify(data) : null,
              data_compressed: p.serialized === 'compressed' ? deflateSync(JSON.stringify(data)) : null,
              created_at: now,
              last_updated: now,
              dag_hash: createHash('md5').update(JSON.stringify(data)).digest('hex'),
              dag_version_id: versions.get(p.dagId),
            }
          }),
        )
      }

      // Aliases declared as outlets, as the DAG processor writes them (group `asset`, the SDK's default).
      const aliases = new Map<string, number>()
      for (const name of new Set(this.producers.flatMap((p) => p.aliases))) {
        const [alias] = await trx('asset_alias').insert({name, group: 'asset'}).returning('id')
        aliases.set(name, (alias as {id: number}).id)
      }

      // Consumers: one reference per (asset, kind); an alias reference when stated.
      for (const consumer of this.consumers) {
        const targets = assetsMatching(assets, consumer.on, consumer.dagId)
        for (const kind of consumer.by) {
          if (targets.length === 0) break
          if (kind === 'id')
            await trx('dag_schedule_asset_reference').insert(
              targets.map((a) => ({asset_id: a.id, dag_id: consumer.dagId, created_at: now, updated_at: now})),
            )
          if (kind === 'name')
            await trx('dag_schedule_asset_name_reference').insert(
              targets.map((a) => ({name: a.name, dag_id: consumer.dagId, created_at: now})),
            )
          if (kind === 'uri')
            await trx('dag_schedule_asset_uri_reference').insert(
              targets.map((a) => ({uri: a.uri, dag_id: consumer.dagId, created_at: now})),
            )
        }

        if (consumer.alias !== undefined) {
          if (!aliases.has(consumer.alias)) {
            const [alias] = await trx('asset_alias').insert({name: consumer.alias, group: 'asset'}).returning('id')
            aliases.set(consumer.alias, (alias as {id: number}).id)
          }

          await trx('dag_schedule_asset_alias_reference').insert({
            alias_id: aliases.get(consumer.alias),
            dag_id: consumer.dagId,
            created_at: now,
            updated_at: now,
          })
        }

        // Its schedule as the DAG processor serializes it (`encode_asset_condition`: flat
        // `{"__type": "asset", name, uri, group, extra}`, `{"__type": "asset_ref", name | uri}`,
        // `{"__type": "asset_alias", name, group}`, combined by `asset_all` / `asset_any` objects).
        const objects = [
          ...consumer.by.flatMap((kind) =>
            targets.map((a) =>
              kind === 'id'
                ? {__type: 'asset', name: a.name, uri: a.uri, group: 'asset', extra: {}}
                : kind === 'name'
                  ? {__type: 'asset_ref', name: a.name}
                  : {__type: 'asset_ref', uri: a.uri},
            ),
          ),
          ...(consumer.alias === undefined ? [] : [{__type: 'asset_alias', name: consumer.alias, group: 'asset'}]),
        ]
        const data = {
          __version: 1,
          dag: {
            dag_id: consumer.dagId,
            tasks: [],
            timetable: {
              __type: 'airflow.timetables.simple.AssetTriggeredTimetable',
              __var: {asset_condition: {__type: consumer.condition === 'any' ? 'asset_any' : 'asset_all', objects}},
            },
          },
        }
        await trx('serialized_dag').insert({
          id: randomUUID(),
          dag_id: consumer.dagId,
          data: JSON.stringify(data),
          created_at: now,
          last_updated: now,
          dag_hash: createHash('md5').update(JSON.stringify(data)).digest('hex'),
          dag_version_id: versions.get(consumer.dagId),
        })
      }

      // Runs, then their task instances.
      const runs: RunRow[] = []
      const tis = new Map<string, TiRow[]>()
      for (const p of this.producers) {
        for (let r = 1; r <= p.runs; r++) {
          const day = new Date(Date.UTC(2026, 11, r))
          const runId = `scheduled__${day.toISOString().slice(0, 19)}+00:00`
          const [row] = await trx('dag_run')
            .insert({
              dag_id: p.dagId,
              queued_at: ago(6),
              logical_date: day,
              start_date: ago(6),
              state: p.runState,
              end_date: p.runState === 'success' || p.runState === 'failed' ? ago(1) : null,
              last_scheduling_decision: p.runState === 'running' ? null : ago(1),
              run_id: runId,
              run_type: 'scheduled',
              triggered_by: 'timetable',
              conf: '{}',
              data_interval_start: new Date(day.getTime() - 86_400_000),
              data_interval_end: day,
              run_after: day,
              log_template_id: (template as {id: number}).id,
              updated_at: now,
              created_dag_version_id: versions.get(p.dagId),
            })
            .returning(['id', 'dag_id', 'run_id', 'logical_date'])
          runs.push(row as RunRow)
        }

        const rows = runs
          .filter((run) => run.dag_id === p.dagId)
          .flatMap((run) =>
            p.tasks.flatMap((taskId) =>
              (p.mappedTasks[taskId] ?? p.mapIndexes).map((mapIndex) => {
                const state = p.stateOf(taskId)
                const finished = finishedStates.has(state)
                return {
                  id: randomUUID(),
                  task_id: taskId,
                  dag_id: p.dagId,
                  run_id: run.run_id,
                  map_index: mapIndex,
                  start_date: ago(5),
                  end_date: finished ? ago(1) : null,
                  duration: finished ? 240 : null,
                  state,
                  try_number: p.tryNumber,
                  max_tries: 1,
                  hostname: 'worker-1',
                  unixname: 'airflow',
                  pool: 'default_pool',
                  pool_slots: 1,
                  queue: 'default',
                  priority_weight: 1,
                  operator: 'PythonOperator',
                  queued_dttm: ago(6),
                  scheduled_dttm: ago(6),
                  last_heartbeat_at: now,
                  executor: 'LocalExecutor',
                  updated_at: now,
                  task_display_name: taskId,
                  dag_version_id: versions.get(p.dagId),
                }
              }),
            ),
          )
        if (rows.length === 0) continue
        const inserted = (await trx('task_instance').insert(rows).returning('*')) as TiRow[]
        tis.set(p.dagId, inserted)
        if (p.emitted) {
          const events = inserted
            .filter((t) => t.state === 'success')
            .flatMap((t) =>
              assets
                .filter((a) => a.active && a.dag_id === t.dag_id && a.task_id === t.task_id)
                .map((a) => ({
                  asset_id: a.id,
                  extra: '{}',
                  source_dag_id: t.dag_id,
                  source_run_id: t.run_id,
                  source_task_id: t.task_id,
                  source_map_index: t.map_index,
                  timestamp: t.end_date,
                })),
            )
          if (events.length > 0) await trx('asset_event').insert(events)
        }
        if (p.workerLog) {
          const logical = new Map(runs.map((run) => [run.run_id, run.logical_date]))
          const succeeded = inserted.filter((t) => t.state === 'success')
          if (succeeded.length > 0)
            await trx('log').insert(
              succeeded.map((t) => ({
                dttm: t.end_date,
                dag_id: t.dag_id,
                task_id: t.task_id,
                run_id: t.run_id,
                map_index: t.map_index,
                try_number: t.try_number,
                event: 'success',
                logical_date: logical.get(t.run_id),
                owner: p.owner,
                extra: '{"host_name": "worker-1"}',
              })),
            )
        }
      }

      return worldOf(this.producers, runs, tis, assets)
    })
  }

  private claim(dagId: string): void {
    if ([...this.producers, ...this.consumers].some((d) => d.dagId === dagId))
      throw new Error(`scenario: DAG ${dagId} stated twice`)
  }
}

/** Starts a scenario on a database with the Airflow fixture schema; see ScenarioBuilder. */
export function scenario(knex: Knex): ScenarioBuilder {
  return new ScenarioBuilder(knex)
}

function assetsMatching(assets: AssetRow[], on: string[], consumer: string): AssetRow[] {
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

function worldOf(producers: Producer[], runs: RunRow[], tis: Map<string, TiRow[]>, assets: AssetRow[]): World {
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

/**
 * What Airflow 3 does when a task instance is retried (`TaskInstance.prepare_db_for_next_try`):
 * the finished try is archived in task_instance_history and the row gets a NEW id, the next
 * try number and the given state. Runs on `knex` (a holder's transaction, to time it inside a
 * race); returns the new id.
 */
export async function retryAsAirflowDoes(knex: Knex, tiId: string, state: string): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, updated_at, 'failed', pool, pool_slots, dag_version_id from task_instance where id = ?`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), try_number = try_number + 1, state = ?, start_date = now(), end_date = null
      where id = ? returning id`,
    [state, tiId],
  )
  return rows[0]!.id
}

/**
 * A running try that failed and will be retried, as Airflow 3's execution API records it
 * (`ti_update_state` with a retry payload, airflow-core/src/airflow/api_fastapi/execution_api/
 * routes/task_instances.py): `prepare_db_for_next_try` archives the try (`record_ti` writes an
 * unfinished try as failed, with an end date) and gives the row a NEW id; the row then reads
 * up_for_retry with its end date, and keeps its try_number until `DagRun.schedule_tis` runs it
 * again. Returns the new id.
 */
export async function failForRetryAsAirflowDoes(knex: Knex, tiId: string): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, clock_timestamp(), duration, updated_at, 'failed', pool, pool_slots, dag_version_id
       from task_instance where id = ?`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), state = 'up_for_retry', end_date = clock_timestamp(), updated_at = clock_timestamp()
      where id = ? returning id`,
    [tiId],
  )
  return rows[0]!.id
}

/**
 * A finished try run again as Airflow 3 runs it, step by step, each a write of its own:
 * 1. the clear (`clear_task_instances` → `TaskInstance.prepare_db_for_next_try`,
 *    airflow-core/src/airflow/models/taskinstance.py): `TaskInstanceHistory.record_ti` archives
 *    the row as it stands (its state, dates and updated_at), the row gets a NEW id and state NULL;
 * 2. the scheduler (`DagRun.schedule_tis`, airflow-core/src/airflow/models/dagrun.py): state
 *    scheduled, `scheduled_dttm` now, `try_number + 1`;
 * 3. unless `until` is 'scheduled', a worker starts it (the execution API's `ti_run`): state
 *    running, `start_date` now, end_date cleared.
 * Every update stamps updated_at (the ORM's onupdate). Returns the new id.
 */
export async function rerunAsAirflowDoes(
  knex: Knex,
  tiId: string,
  until: 'scheduled' | 'running' = 'running',
): Promise<string> {
  await knex.raw(
    `insert into task_instance_history (task_instance_id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id)
     select id, task_id, dag_id, run_id, map_index, try_number, start_date, end_date, duration, updated_at, state, pool, pool_slots, dag_version_id
       from task_instance where id = ?`,
    [tiId],
  )
  const {rows} = await knex.raw<{rows: Array<{id: string}>}>(
    `update task_instance set id = gen_random_uuid(), state = null, updated_at = clock_timestamp() where id = ? returning id`,
    [tiId],
  )
  const id = rows[0]!.id
  await knex.raw(
    `update task_instance set state = 'scheduled', scheduled_dttm = clock_timestamp(), try_number = try_number + 1, updated_at = clock_timestamp()
      where id = ?`,
    [id],
  )
  if (until === 'running')
    await knex.raw(
      `update task_instance set state = 'running', start_date = clock_timestamp(), end_date = null, updated_at = clock_timestamp()
        where id = ?`,
      [id],
    )
  return id
}

/**
 * The log row Airflow's worker path writes when the task instance's current try succeeds, from 3.2
 * (`ti_update_state`, apache/airflow #61932): evidence that this try really finished, so events it
 * lacks were lost.
 */
export async function logWorkerSuccess(knex: Knex, tiId: string): Promise<void> {
  await knex.raw(
    `insert into log (dttm, dag_id, task_id, run_id, map_index, try_number, event, logical_date, owner, extra)
     select coalesce(ti.end_date, now()), ti.dag_id, ti.task_id, ti.run_id, ti.map_index, ti.try_number, 'success', dr.logical_date, d.owners,
            '{"host_name": "worker-1"}'
       from task_instance ti join dag_run dr on dr.dag_id = ti.dag_id and dr.run_id = ti.run_id join dag d on d.dag_id = ti.dag_id
      where ti.id = ?`,
    [tiId],
  )
}

/**
 * A newer version of a DAG, as the DAG processor writes one when the file changes: a dag_version
 * (the next version number, created after the others) with a serialized DAG edited from the
 * latest one. Returns its id. Runs keep the version they were created with.
 */
export async function addDagVersion(
  knex: Knex,
  dagId: string,
  edit: (data: {dag: {tasks: Array<{__var: Record<string, unknown>}>}}) => void,
): Promise<string> {
  const {rows} = await knex.raw<{rows: Array<{data: unknown; version_number: number}>}>(
    `select sd.data, v.version_number from serialized_dag sd join dag_version v on v.id = sd.dag_version_id
      where sd.dag_id = ? order by v.created_at desc limit 1`,
    [dagId],
  )
  const latest = rows[0]!
  const data = (typeof latest.data === 'string' ? JSON.parse(latest.data) : latest.data) as {
    dag: {tasks: Array<{__var: Record<string, unknown>}>}
  }
  edit(data)
  const id = randomUUID()
  const later = knex.raw(`now() + interval '1 second'`)
  await knex('dag_version').insert({
    id,
    version_number: latest.version_number + 1,
    dag_id: dagId,
    bundle_name: 'dags-folder',
    created_at: later,
    last_updated: later,
  })
  await knex('serialized_dag').insert({
    id: randomUUID(),
    dag_id: dagId,
    data: JSON.stringify(data),
    created_at: later,
    last_updated: later,
    dag_hash: createHash('md5').update(JSON.stringify(data)).digest('hex'),
    dag_version_id: id,
  })
  return id
}
