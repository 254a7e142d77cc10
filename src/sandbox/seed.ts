import type {Knex} from 'knex'

import {usageError} from '../errors.js'

/**
 * A realistic Airflow-shaped world for demos, tests and benchmarks, built with set-based inserts
 * (generate_series), so 100 000 task instances take seconds, not a loop of round trips.
 *
 * - producer DAGs `etl_NNN` with owners, `runs` running dag runs each, `tasks` tasks per run;
 * - `outlets` outlet assets per task, all active except one (the last outlet of etl_001.task_1),
 *   so the "inactive asset is skipped" path is always visible;
 * - consumer DAGs `report_NNN` scheduled on every asset by id (report_001 on all of etl_001's,
 *   so those have two consumers), one by name, one by uri, one through the alias
 *   `lake.daily_alias`; the last consumer is paused and must never be queued;
 * - task instances RUNNING, except in etl_001's first run: task_2 already SUCCESS and task_3
 *   UP_FOR_RETRY (a conflict for `complete`).
 */
export interface SeedOptions {
  dags: number
  runs: number
  tasks: number
  outlets: number
  consumers: number
}

export const defaultSeed: SeedOptions = {dags: 3, runs: 2, tasks: 4, outlets: 3, consumers: 3}

export interface SeedResult {
  dags: number
  consumerDags: number
  pausedConsumers: number
  dagRuns: number
  taskInstances: number
  runningTaskInstances: number
  assets: number
  activeAssets: number
  scheduleReferences: number
}

const limits: Record<keyof SeedOptions, [number, number]> = {
  dags: [1, 10_000],
  runs: [1, 10_000],
  tasks: [1, 1_000],
  outlets: [0, 2_000],
  consumers: [0, 100],
}

export function validateSeedOptions(options: SeedOptions): void {
  for (const [key, [min, max]] of Object.entries(limits) as Array<[keyof SeedOptions, [number, number]]>) {
    const value = options[key]
    if (!Number.isInteger(value) || value < min || value > max) throw usageError(`--${key} must be a whole number from ${min} to ${max} (got ${value}).`)
  }

  if (options.dags * options.runs * options.tasks > 2_000_000) throw usageError('--dags × --runs × --tasks may not exceed 2 000 000 task instances.')
}

/** Seeds an empty fixture database. Runs in the caller's transaction. */
export async function seedWorld(trx: Knex.Transaction, options: SeedOptions): Promise<SeedResult> {
  validateSeedOptions(options)
  const {rows: existing} = await trx.raw<{rows: Array<{n: string}>}>('select count(*) as n from dag')
  if (Number(existing[0]?.n ?? 0) > 0) throw usageError('The database already holds DAGs; seed only an empty sandbox.', ['Use airlock sandbox seed --reset to start over.'])

  const {dags, runs, tasks, outlets, consumers} = options
  const bind = {dags, runs, tasks, outlets, consumers}
  const pad = (column: string) => `lpad((${column})::text, 3, '0')`

  await trx.raw(`insert into dag_bundle (name, active, version, last_refreshed) values ('dags-folder', true, null, now())`)
  await trx.raw(`insert into log_template (filename, elasticsearch_id, created_at)
    values ('dag_id={{ ti.dag_id }}/run_id={{ ti.run_id }}/task_id={{ ti.task_id }}/attempt={{ try_number }}.log', '{dag_id}-{task_id}-{run_id}-{map_index}-{try_number}', now())`)

  await trx.raw(
    `insert into dag (dag_id, is_paused, is_stale, last_parsed_time, fileloc, relative_fileloc, bundle_name, owners,
                      timetable_summary, max_active_tasks, max_active_runs, max_consecutive_failed_dag_runs, has_task_concurrency_limits)
     select name, paused, false, now(), '/opt/airflow/dags/' || name || '.py', name || '.py', 'dags-folder', owner,
            summary, 16, 16, 0, false
     from (
       select 'etl_' || ${pad('d')} as name, false as paused,
              (array['data-eng', 'analytics', 'platform'])[1 + (d - 1) % 3] as owner, '@daily' as summary
       from generate_series(1, :dags) as d
       union all
       select 'report_' || ${pad('c')}, c = :consumers and :consumers > 1, 'analytics', 'Asset'
       from generate_series(1, :consumers) as c
     ) as dags`,
    bind,
  )
  await trx.raw(`insert into dag_version (id, version_number, dag_id, bundle_name, created_at, last_updated)
    select gen_random_uuid(), 1, dag_id, bundle_name, now(), now() from dag`)

  await trx.raw(
    `insert into asset (name, uri, "group", extra, created_at, updated_at)
     select format('etl_%s.task_%s.out_%s', ${pad('d')}, t, k), format('s3://lake/etl_%s/task_%s/out_%s', ${pad('d')}, t, k),
            'asset', '{}', now(), now()
     from generate_series(1, :dags) d, generate_series(1, :tasks) t, generate_series(1, :outlets) k
     order by d, t, k`,
    bind,
  )
  await trx.raw(
    `insert into asset_active (name, uri)
     select name, uri from asset
     where not (:outlets > 1 and name = format('etl_001.task_1.out_%s', cast(:outlets as int)))`,
    bind,
  )
  await trx.raw(
    `insert into task_outlet_asset_reference (asset_id, dag_id, task_id, created_at, updated_at)
     select id, split_part(name, '.', 1), split_part(name, '.', 2), now(), now() from asset`,
  )

  if (consumers > 0) {
    await trx.raw(
      `insert into dag_schedule_asset_reference (asset_id, dag_id, created_at, updated_at)
       select id, 'report_' || ${pad('1 + id % :consumers')}, now(), now() from asset
       union
       select id, 'report_001', now(), now() from asset where name like 'etl_001.%'`,
      bind,
    )
    await trx.raw(`insert into asset_alias (name, "group") values ('lake.daily_alias', 'asset')`)
    await trx.raw(`insert into asset_alias_asset (alias_id, asset_id)
      select alias.id, asset.id from asset_alias alias, asset where alias.name = 'lake.daily_alias' and asset.name = 'etl_001.task_1.out_1'`)
    await trx.raw(`insert into dag_schedule_asset_alias_reference (alias_id, dag_id, created_at, updated_at)
      select id, 'report_001', now(), now() from asset_alias where name = 'lake.daily_alias'`)
    const second = consumers > 1 ? 'report_002' : 'report_001'
    await trx.raw(`insert into dag_schedule_asset_name_reference (name, dag_id, created_at)
      select name, ?, now() from asset where name = 'etl_001.task_1.out_1'`, [second])
    await trx.raw(`insert into dag_schedule_asset_uri_reference (uri, dag_id, created_at)
      select uri, ?, now() from asset where name = 'etl_001.task_2.out_1'`, [second])
  }

  await trx.raw(
    `insert into dag_run (dag_id, queued_at, logical_date, start_date, state, run_id, run_type, triggered_by, conf,
                          data_interval_start, data_interval_end, run_after, log_template_id, updated_at, created_dag_version_id)
     select dag.dag_id, day - interval '1 minute', day, day + interval '1 minute', 'running',
            'scheduled__' || to_char(day at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') || '+00:00', 'scheduled', 'timetable', '{}',
            day - interval '1 day', day, day, (select max(id) from log_template), now(), version.id
     from dag
     join dag_version version on version.dag_id = dag.dag_id
     cross join lateral (
       select date_trunc('day', now()) - (r || ' days')::interval as day from generate_series(1, :runs) as r
     ) as days
     where dag.dag_id like 'etl\\_%'`,
    bind,
  )

  await trx.raw(
    `insert into task_instance (id, task_id, dag_id, run_id, map_index, start_date, end_date, duration, state, try_number, max_tries,
                                hostname, unixname, pool, pool_slots, queue, priority_weight, operator, queued_dttm, scheduled_dttm,
                                last_heartbeat_at, executor, updated_at, task_display_name, dag_version_id)
     select gen_random_uuid(), 'task_' || t, run.dag_id, run.run_id, -1, now() - interval '5 minutes',
            case when seeded.state = 'success' then now() - interval '1 minute' end,
            case when seeded.state = 'success' then 240 end,
            seeded.state, 1, 1, 'worker-1', 'airflow', 'default_pool', 1, 'default', 1, 'PythonOperator',
            now() - interval '6 minutes', now() - interval '6 minutes', now(), 'LocalExecutor', now(), 'task_' || t, run.created_dag_version_id
     from dag_run run
     cross join generate_series(1, :tasks) as t
     cross join lateral (
       select case
         when run.dag_id = 'etl_001' and run.run_id = (select min(run_id) from dag_run where dag_id = 'etl_001') and t = 2 then 'success'
         when run.dag_id = 'etl_001' and run.run_id = (select min(run_id) from dag_run where dag_id = 'etl_001') and t = 3 then 'up_for_retry'
         else 'running'
       end as state
     ) as seeded`,
    bind,
  )

  const {rows} = await trx.raw<{rows: Array<Record<string, string>>}>(`select
      (select count(*) from dag where dag_id like 'etl\\_%') as dags,
      (select count(*) from dag where dag_id like 'report\\_%') as consumer_dags,
      (select count(*) from dag where is_paused) as paused_consumers,
      (select count(*) from dag_run) as dag_runs,
      (select count(*) from task_instance) as task_instances,
      (select count(*) from task_instance where state = 'running') as running,
      (select count(*) from asset) as assets,
      (select count(*) from asset_active) as active_assets,
      (select (select count(*) from dag_schedule_asset_reference) + (select count(*) from dag_schedule_asset_alias_reference)
            + (select count(*) from dag_schedule_asset_name_reference) + (select count(*) from dag_schedule_asset_uri_reference)) as refs`)
  const counts = rows[0]!
  return {
    dags: Number(counts.dags),
    consumerDags: Number(counts.consumer_dags),
    pausedConsumers: Number(counts.paused_consumers),
    dagRuns: Number(counts.dag_runs),
    taskInstances: Number(counts.task_instances),
    runningTaskInstances: Number(counts.running),
    assets: Number(counts.assets),
    activeAssets: Number(counts.active_assets),
    scheduleReferences: Number(counts.refs),
  }
}
