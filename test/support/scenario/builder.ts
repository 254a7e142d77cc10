import {createHash, randomUUID} from 'node:crypto'
import {deflateSync} from 'node:zlib'

import type {Knex} from 'knex'

import {readDagColumns} from '../../../src/worlds/dagColumns.js'
import type {TiRow} from './rows.js'
import {
  assetsMatching,
  worldOf,
  type AssetRow,
  type Consumer,
  type ConsumerOptions,
  type Producer,
  type ProducerOptions,
  type RunRow,
  type TiState,
  type World,
} from './world.js'

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
          timetable: 'CronTriggerTimetable' as const,
          maxActiveRuns: 16,
        })),
        ...this.consumers.map((c) => ({
          dagId: c.dagId,
          paused: c.paused,
          stale: c.stale,
          owner: c.owner,
          summary: 'Asset',
          timetable: 'AssetTriggeredTimetable' as const,
          maxActiveRuns: c.maxActiveRuns,
        })),
      ]
      const versions = new Map<string, string>()
      if (dags.length > 0) {
        const later = await readDagColumns(trx)
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
            ...later.row(d.timetable),
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
        // The dag row's `asset_expression` (`BaseAsset.as_expression`), which the DAG processor
        // writes with the schedule: 3.2+'s `dags_needing_dagruns` deletes the queue rows of a DAG
        // without one.
        const expressions = [
          ...consumer.by.flatMap((kind) =>
            targets.map((a) =>
              kind === 'id'
                ? {asset: {uri: a.uri, name: a.name, group: 'asset', id: a.id}}
                : kind === 'name'
                  ? {asset_ref: {name: a.name}}
                  : {asset_ref: {uri: a.uri}},
            ),
          ),
          ...(consumer.alias === undefined ? [] : [{alias: {name: consumer.alias, group: 'asset'}}]),
        ]
        await trx('dag')
          .where({dag_id: consumer.dagId})
          .update({asset_expression: JSON.stringify({[consumer.condition === 'any' ? 'any' : 'all']: expressions})})
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
