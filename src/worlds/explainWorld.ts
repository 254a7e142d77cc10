import type {Knex} from 'knex'

import type {SeedOptions} from './seed.js'

/**
 * The world `bench --world explain-all` runs `explain --all` on (issue 44, target 4): the scale
 * world's consumers, assets and queue without its task instances. What explain --all reads grows
 * with the consumers, the leaves of their conditions and the queue rows, not with the task
 * instances, so one run of 10 tasks per producer DAG stands for the scale world's twenty: at 10,000
 * assets the same 3 consumer DAGs each scheduled on about 3,333 assets and 10,004 queue rows as
 * `bench --scale` at 200,000 task instances.
 */
export function explainWorldSeed(assets: number): SeedOptions {
  const tasks = 10
  return {dags: Math.max(1, Math.ceil(assets / tasks)), runs: 1, tasks, outlets: 1, consumers: 3}
}

/**
 * `count` asset events spread round-robin over every asset, each sourced by its asset's producer
 * task instance and stamped before now: every queued leaf then names the event that wrote its
 * row (as after real completions), and every missing one a last event.
 */
export async function fillExplainEvents(knex: Knex, count: number): Promise<void> {
  const {rows} = await knex.raw<{rows: Array<{n: number}>}>('select count(*)::int as n from asset')
  const assets = rows[0]!.n
  if (count <= 0 || assets === 0) return
  // A million a statement: ten million in one would outlast the scratch session's statement timeout.
  const chunk = 1_000_000
  for (let first = 1; first <= count; first += chunk) {
    await knex.raw(
      `with assets as (select row_number() over (order by a.id) - 1 as i, a.id, ti.dag_id, ti.run_id, ti.task_id
                         from asset a
                         join task_outlet_asset_reference o on o.asset_id = a.id
                         join task_instance ti on ti.dag_id = o.dag_id and ti.task_id = o.task_id)
       insert into asset_event (asset_id, extra, source_dag_id, source_run_id, source_task_id, source_map_index, "timestamp")
       select a.id, '{}'::json, a.dag_id, a.run_id, a.task_id, -1, now() - interval '1 hour' - (g.n || ' milliseconds')::interval
         from (select n, n % ?::int as i from generate_series(?::int, ?::int) as n) as g
         join assets a on a.i = g.i`,
      [assets, first, Math.min(count, first + chunk - 1)],
    )
  }
}

/**
 * The consumers' queue as a long pause of the scheduler leaves it: a row for every asset each
 * consumer is scheduled on by id but the newest one (3.0's key, one row per asset and DAG), so
 * each consumer waits for one asset. Returns the consumers queued and the rows.
 */
export async function fillConsumerQueue(knex: Knex): Promise<{dags: number; rows: number}> {
  await knex.raw(
    `insert into asset_dag_run_queue (asset_id, target_dag_id, created_at)
     select r.asset_id, r.dag_id, now() from dag_schedule_asset_reference r
      where r.asset_id < (select max(m.asset_id) from dag_schedule_asset_reference m where m.dag_id = r.dag_id)
     on conflict do nothing`,
  )
  const {rows} = await knex.raw<{rows: Array<{dags: number; rows: number}>}>(
    `select count(distinct target_dag_id)::int as dags, count(*)::int as rows from asset_dag_run_queue`,
  )
  return rows[0]!
}

export async function clearQueue(knex: Knex): Promise<void> {
  await knex.raw('delete from asset_dag_run_queue')
}
